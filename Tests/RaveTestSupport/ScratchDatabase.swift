import Foundation
import RavePostgres
import RaveTransport

/// Throwaway databases on the PostgreSQL server that `scripts/with-postgres.sh` starts for the tests and names in
/// RAVE_TEST_POSTGRES_URL (a superuser URL to database `postgres`).
///
/// Every test gets a database of its own, so tests run in parallel without seeing each other's rows.
public enum ScratchDatabase {
    /// Event loops for the connections that create and drop the databases.
    public static let group: EventLoopGroup = {
        do {
            return try EventLoopGroup(loopCount: 2)
        } catch {
            preconditionFailure("cannot start the test event loops: \(error)")
        }
    }()

    /// The server's URL; a test run outside with-postgres.sh fails with an error saying so (it does not skip).
    public static func serverURL() throws(ScratchDatabaseError) -> String {
        guard let url = ProcessInfo.processInfo.environment["RAVE_TEST_POSTGRES_URL"], url.contains("/") else {
            throw ScratchDatabaseError(
                description: "RAVE_TEST_POSTGRES_URL is not set: run the tests through scripts/with-postgres.sh")
        }
        return url
    }

    /// Creates an empty database named `prefix` and 16 random hex digits; returns its name and URL.
    public static func create(prefix: String) async throws -> (name: String, url: String) {
        let server = try serverURL()
        let name = prefix + RaveID.random().hex.prefix(16)
        let admin = try await PostgresConnection.connect(to: server, on: group.next())
        defer { admin.close() }
        try await admin.runScript("CREATE DATABASE \(name)")
        return (name, url(of: name, on: server))
    }

    /// Drops database `name`, closing any connection still open to it; failures are ignored (a test's own
    /// outcome is what matters, and the server is thrown away after the run).
    public static func drop(_ name: String) async {
        guard let server = try? serverURL(),
            let admin = try? await PostgresConnection.connect(to: server, on: group.next())
        else { return }
        try? await admin.runScript("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        admin.close()
    }

    /// How many tests of one process hold scratch databases at once (`RAVE_TEST_DATABASES`, default 16).
    ///
    /// Swift Testing starts every test of a target at once; two hundred tests creating, migrating and using their
    /// databases together on two cores made connections wait past any timeout. The others wait their turn here,
    /// before they touch the server. A test that already holds a slot (a harness with two databases) takes its
    /// second database without waiting.
    static let slots = TestSlots(
        capacity: ProcessInfo.processInfo.environment["RAVE_TEST_DATABASES"].flatMap(Int.init).map { max(1, $0) }
            ?? 16)
    @TaskLocal static var holdsSlot = false

    /// Runs `body` with the URL of a new empty database, and drops the database afterwards whether `body`
    /// threw or not; waits for a slot first (`slots`).
    public static func with<Result>(prefix: String, _ body: (String) async throws -> Result) async throws -> Result {
        if holdsSlot { return try await withDatabase(prefix: prefix, body) }
        await slots.acquire()
        do {
            let result = try await $holdsSlot.withValue(true) { try await withDatabase(prefix: prefix, body) }
            await slots.release()
            return result
        } catch {
            await slots.release()
            throw error
        }
    }

    private static func withDatabase<Result>(
        prefix: String, _ body: (String) async throws -> Result
    ) async throws -> Result {
        let database = try await create(prefix: prefix)
        let result: Result
        do {
            result = try await body(database.url)
        } catch {
            await drop(database.name)
            throw error
        }
        await drop(database.name)
        return result
    }

    /// A pool of `size` connections to the database at `url`, on `group`.
    public static func pool(url: String, size: Int = 8) throws -> PostgresPool {
        try PostgresPool(configuration: poolConfiguration(url: url, size: size), group: group)
    }

    /// The settings of a test's pool of `size` connections to `url`: a test target's tests all run at once on the
    /// machine's cores, so a connection may stay busy for seconds; a test waits for one as long as it takes (60 s)
    /// (and as long for a connection to open) rather than failing after the production pool's 5 s, which are about
    /// latency no test measures.
    public static func poolConfiguration(url: String, size: Int) -> PostgresPool.Configuration {
        var configuration = PostgresPool.Configuration(connectionString: url)
        configuration.size = size
        configuration.acquireTimeout = .seconds(60)
        configuration.connectTimeout = .seconds(60)
        return configuration
    }

    /// Runs `body` with a pool on a new database migrated from `migrations` (a service's migrations directory),
    /// and drops the database afterwards whether `body` threw or not.
    public static func withMigratedPool<Result>(
        prefix: String, migrations: String, _ body: (PostgresPool) async throws -> Result
    ) async throws -> Result {
        try await with(prefix: prefix) { url in
            let pool = try pool(url: url)
            defer { pool.shutdown() }
            try await Migrator(pool: pool, directory: migrations).migrate()
            return try await body(pool)
        }
    }

    private static func url(of name: String, on server: String) -> String {
        guard let slash = server.lastIndex(of: "/") else { return server }
        return server[..<slash] + "/" + name
    }
}

/// RAVE_TEST_POSTGRES_URL is missing.
public struct ScratchDatabaseError: Error, CustomStringConvertible {
    public let description: String
}

/// A counting semaphore for tests: `acquire` waits while `capacity` holders are in.
public actor TestSlots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public init(capacity: Int) { free = capacity }

    public func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    public func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
