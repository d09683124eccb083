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

    /// Runs `body` with the URL of a new empty database, and drops the database afterwards whether `body`
    /// threw or not.
    public static func with<Result>(prefix: String, _ body: (String) async throws -> Result) async throws -> Result {
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
        var configuration = PostgresPool.Configuration(connectionString: url)
        configuration.size = size
        return try PostgresPool(configuration: configuration, group: group)
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
