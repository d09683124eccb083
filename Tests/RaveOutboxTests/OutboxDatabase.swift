import RaveOutbox
import RavePostgres
import RaveTestSupport
import RaveTransport

/// A throwaway database with the outbox tables, and a pool on it; dropped when the test ends.
struct OutboxDatabase {
    /// The loops the pools and listeners run on.
    static var group: EventLoopGroup { ScratchDatabase.group }

    let url: String
    let pool: PostgresPool

    /// Runs `body` against a fresh database and drops it afterwards, whether `body` threw or not.
    @discardableResult
    static func with<Result>(_ body: (OutboxDatabase) async throws -> Result) async throws -> Result {
        try await ScratchDatabase.with(prefix: "rave_outbox_") { url in
            let pool = try ScratchDatabase.pool(url: url, size: 6)
            defer { pool.shutdown() }
            try await pool.withConnection { try await $0.runScript(Outbox.migration) }
            return try await body(OutboxDatabase(url: url, pool: pool))
        }
    }
}
