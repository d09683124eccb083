import Foundation
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTransport
import Testing

@testable import Gifts

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway database on the test server with the service's migrations applied; dropped afterwards.
struct TestDatabase {
    /// One loop group shared by every test; connections spread over it, tests stay independent.
    static let group: EventLoopGroup = {
        do {
            return try EventLoopGroup(loopCount: 2)
        } catch {
            preconditionFailure("cannot start the test event loops: \(error)")
        }
    }()

    let name: String
    let url: String
    private let serverURL: String

    /// The superuser URL `with-postgres.sh` exports; tests fail (not skip) without it.
    static func serverURL() throws -> String {
        guard let value = getenv("RAVE_TEST_POSTGRES_URL") else {
            Issue.record("RAVE_TEST_POSTGRES_URL is not set: run the tests through scripts/with-postgres.sh")
            throw PostgresError(.client, "RAVE_TEST_POSTGRES_URL is not set")
        }
        return String(cString: value)
    }

    static func create() async throws -> TestDatabase {
        let serverURL = try serverURL()
        let name = "rave_gifts_test_" + RaveID.random().hex.prefix(16)
        let admin = try await PostgresConnection.connect(to: serverURL, on: group.next())
        defer { admin.close() }
        try await admin.runScript("CREATE DATABASE \(name)")
        guard let slash = serverURL.lastIndex(of: "/") else { throw PostgresError(.client, "bad URL \(serverURL)") }
        return TestDatabase(name: name, url: serverURL[..<slash] + "/" + name, serverURL: serverURL)
    }

    func makePool(size: Int = 8) throws -> PostgresPool {
        var configuration = PostgresPool.Configuration(connectionString: url)
        configuration.size = size
        return try PostgresPool(configuration: configuration, group: Self.group)
    }

    func drop() async throws {
        let admin = try await PostgresConnection.connect(to: serverURL, on: Self.group.next())
        defer { admin.close() }
        try await admin.runScript("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// Runs `body` with a migrated pool on a fresh database, dropping it afterwards whether `body` threw or not.
    static func withPool<Result>(_ body: (PostgresPool) async throws -> Result) async throws -> Result {
        let database = try await create()
        let pool = try database.makePool()
        do {
            try await Migrator(pool: pool, directory: GiftsMain.migrationsDirectory).migrate()
            let result = try await body(pool)
            pool.shutdown()
            try await database.drop()
            return result
        } catch {
            pool.shutdown()
            try? await database.drop()
            throw error
        }
    }
}
