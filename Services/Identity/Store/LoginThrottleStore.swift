import Foundation
import RavePostgres

/// The login throttle's counters (`login_throttle`, migration 0007); the arithmetic is `LoginThrottle`'s.
///
/// Times come from the throttle's clock, never from PostgreSQL's `now()`, so tests can move time.
struct LoginThrottleStore: Sendable {
    let database: any PostgresQueryable

    /// Creates the missing counters and locks them all, in key order (so concurrent attempts never deadlock).
    static let lock = PostgresStatement(
        name: "identity_lock_login_throttle",
        sql: """
            INSERT INTO login_throttle AS t (key, updated_at)
            SELECT k.key, $2 FROM unnest($1::text[]) AS k (key) ORDER BY k.key
            ON CONFLICT (key) DO UPDATE SET failures = t.failures
            RETURNING key, failures, updated_at, succeeded_at
            """)
    static let charge = PostgresStatement(
        name: "identity_charge_login_throttle",
        sql: "UPDATE login_throttle SET failures = $2, updated_at = $3 WHERE key = $1")
    /// Clears the pair $2, if any (and records its success); refunds one failure of the other counters of $1.
    static let refund = PostgresStatement(
        name: "identity_refund_login_throttle",
        sql: """
            UPDATE login_throttle SET
                failures = CASE WHEN key = $2 THEN 0 ELSE greatest(0, failures - 1) END,
                updated_at = CASE WHEN key = $2 THEN $3 ELSE updated_at END,
                succeeded_at = CASE WHEN key = $2 THEN $3 ELSE succeeded_at END
            WHERE key = ANY($1)
            """)
    static let deleteIdle = PostgresStatement(
        name: "identity_delete_idle_login_throttle",
        sql: """
            DELETE FROM login_throttle
            WHERE updated_at < $1 AND (succeeded_at IS NULL OR succeeded_at < $2)
            """)

    /// The counters of `keys`, created empty as of `now` where missing, locked until the transaction ends.
    func lock(_ keys: LoginThrottle.Keys, now: Date) async throws -> [String: LoginThrottle.Counter] {
        let names = [keys.pair, keys.account, keys.address].compactMap { $0 }
        var counters: [String: LoginThrottle.Counter] = [:]
        for row in try await database.execute(Self.lock, [names, now]) {
            counters[try row.decode(column: "key")] = LoginThrottle.Counter(
                failures: try row.decode(column: "failures"), updatedAt: try row.decode(column: "updated_at"),
                succeededAt: try row.decode(Date?.self, column: "succeeded_at"))
        }
        return counters
    }

    /// Stores each counter's new count as of `now`.
    func charge(_ counts: [String: Double], now: Date) async throws {
        for (key, failures) in counts.sorted(by: { $0.key < $1.key }) {
            _ = try await database.execute(Self.charge, [key, failures, now])
        }
    }

    /// Takes one failure back from each of `charged`; `clearing` (a pair that succeeded) is emptied and marked
    /// trusted as of `now` instead.
    func refund(_ charged: [String], clearing: String?, now: Date) async throws {
        _ = try await database.execute(Self.refund, [charged, clearing ?? "", now])
    }

    /// Deletes counters last charged before `drainedBefore` (so drained) without a success since `succeededBefore`.
    func deleteIdle(drainedBefore: Date, succeededBefore: Date) async throws -> Int {
        try await database.execute(Self.deleteIdle, [drainedBefore, succeededBefore]).affectedRowCount
    }
}
