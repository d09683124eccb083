import Foundation
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Testing

@testable import Gifts

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway database on the test server (RaveTestSupport's `ScratchDatabase`), for tests that need its URL or
/// a pool of their own; `withPool` is the common case.
struct TestDatabase {
    /// One loop group shared by every test; connections spread over it, tests stay independent.
    static var group: EventLoopGroup { ScratchDatabase.group }

    let name: String
    let url: String

    static func create() async throws -> TestDatabase {
        let database = try await ScratchDatabase.create(prefix: "rave_gifts_test_")
        return TestDatabase(name: database.name, url: database.url)
    }

    func makePool(size: Int = 8) throws -> PostgresPool {
        try ScratchDatabase.pool(url: url, size: size)
    }

    func drop() async throws {
        await ScratchDatabase.drop(name)
    }

    /// Runs `body` with a migrated pool on a fresh database, dropping it afterwards whether `body` threw or not.
    static func withPool<Result>(_ body: (PostgresPool) async throws -> Result) async throws -> Result {
        try await ScratchDatabase.withMigratedPool(
            prefix: "rave_gifts_test_", migrations: GiftsMain.migrationsDirectory, body)
    }
}
