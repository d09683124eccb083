import RaveOutbox
import RavePostgres
import RaveTransport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway database with the outbox tables, and a pool on it; dropped when the test ends.
struct OutboxDatabase {
    static let group: EventLoopGroup = {
        do {
            return try EventLoopGroup(loopCount: 2)
        } catch {
            preconditionFailure("cannot start the test event loops: \(error)")
        }
    }()

    let name: String
    let url: String
    let pool: PostgresPool

    /// Runs `body` against a fresh database and drops it afterwards, whether `body` threw or not.
    @discardableResult
    static func with<Result>(_ body: (OutboxDatabase) async throws -> Result) async throws -> Result? {
        guard let serverURL = getenv("RAVE_TEST_POSTGRES_URL").map({ String(cString: $0) }),
            let slash = serverURL.lastIndex(of: "/")
        else {
            Issue.record("RAVE_TEST_POSTGRES_URL is not set: run the tests through scripts/with-postgres.sh")
            return nil
        }
        let name = "rave_outbox_" + RaveID.random().description.filter { $0 != "-" }.prefix(16)
        let admin = try await PostgresConnection.connect(to: serverURL, on: group.next())
        defer { admin.close() }
        try await admin.runScript("CREATE DATABASE \(name)")
        let url = serverURL[..<slash] + "/" + name
        var configuration = PostgresPool.Configuration(connectionString: url)
        configuration.size = 6
        let pool = try PostgresPool(configuration: configuration, group: group)
        let result: Result
        do {
            try await pool.withConnection { try await $0.runScript(Outbox.migration) }
            result = try await body(OutboxDatabase(name: name, url: url, pool: pool))
        } catch {
            pool.shutdown()
            try? await admin.runScript("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
            throw error
        }
        pool.shutdown()
        try await admin.runScript("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        return result
    }
}
