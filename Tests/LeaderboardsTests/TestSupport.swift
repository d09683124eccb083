import Foundation
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

@testable import Leaderboards

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
        let database = try await ScratchDatabase.create(prefix: "rave_lb_test_")
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
            prefix: "rave_lb_test_", migrations: LeaderboardsMain.migrationsDirectory, body)
    }
}

/// A clock the test moves by hand (microseconds since the epoch).
final class ManualClock: Sendable {
    private let time: Mutex<Int64>

    init(_ start: Int64) { time = Mutex(start) }

    func advance(by microseconds: Int64) { time.withLock { $0 += microseconds } }
    func set(_ value: Int64) { time.withLock { $0 = value } }

    var wallClock: WallClock { WallClock { self.time.withLock { $0 } } }
}

/// Request contexts as the gateway would build them.
enum Callers {
    static func context(user: RaveID?, app: String, scopes: Set<String> = []) -> RequestContext {
        RequestContext(
            requestID: "test", method: "test", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: "gateway"),
            caller: Caller(userID: user?.hex ?? "", appID: app, sessionID: "s", scopes: scopes),
            logger: Logger(label: "test", level: .warning))
    }

    static func admin(app: String) -> RequestContext {
        context(user: nil, app: app, scopes: [Caller.adminScope])
    }
}

/// A fresh app id per test, so tests never see each other's boards even on a shared database.
func uniqueApp() -> String { RaveID.random().hex }
