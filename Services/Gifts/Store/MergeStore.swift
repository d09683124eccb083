import RaveMerges
import RavePostgres

/// Unites a merged-away user's gifts into the target's (DESIGN.md §7), once per merge id.
///
/// The target keeps every gift, request, invitation and install link of both, sent and received; pending gifts
/// to the source are pending gifts to the target. The source's idempotency keys move too, so a client retrying
/// a send under the old id after the merge still gets its first result.
struct MergeStore: Sendable {
    let pool: PostgresPool

    private static let recordMerge = PostgresStatement(
        name: "gifts_merge_record",
        sql: """
            INSERT INTO applied_merges (merge_id, source_id, target_id) VALUES ($1, $2, $3)
            ON CONFLICT DO NOTHING RETURNING 1
            """)
    private static let moves = [
        PostgresStatement(
            name: "gifts_merge_sent", sql: "UPDATE gifts SET sender_id = $2 WHERE sender_id = $1"),
        PostgresStatement(
            name: "gifts_merge_received", sql: "UPDATE gifts SET recipient_id = $2 WHERE recipient_id = $1"),
        PostgresStatement(
            name: "gifts_merge_requested", sql: "UPDATE gift_requests SET requester_id = $2 WHERE requester_id = $1"),
        PostgresStatement(
            name: "gifts_merge_asked", sql: "UPDATE gift_requests SET recipient_id = $2 WHERE recipient_id = $1"),
        PostgresStatement(
            name: "gifts_merge_external", sql: "UPDATE external_gifts SET sender_id = $2 WHERE sender_id = $1"),
        PostgresStatement(
            name: "gifts_merge_links", sql: "UPDATE install_links SET creator_id = $2 WHERE creator_id = $1"),
        // Today's counts add up, so a merge does not reset a sender's daily limit.
        PostgresStatement(
            name: "gifts_merge_daily",
            sql: """
                WITH moved AS (DELETE FROM daily_sends WHERE sender_id = $1 RETURNING gift_type_id, day, sent)
                INSERT INTO daily_sends (sender_id, gift_type_id, day, sent, granted)
                SELECT $2, gift_type_id, day, sent, 0 FROM moved
                ON CONFLICT (sender_id, gift_type_id, day) DO UPDATE SET sent = daily_sends.sent + excluded.sent
                """),
        PostgresStatement(
            name: "gifts_merge_keys",
            sql: """
                WITH moved AS (
                    DELETE FROM idempotent_calls WHERE sender_id = $1
                    RETURNING operation, idempotency_key, fingerprint, response, created_at)
                INSERT INTO idempotent_calls (sender_id, operation, idempotency_key, fingerprint, response, created_at)
                SELECT $2, operation, idempotency_key, fingerprint, response, created_at FROM moved
                ON CONFLICT DO NOTHING
                """),
    ]

    /// Applies the merge and records it in `merged_users`; false when this merge id was applied before (nothing
    /// changes then).
    func merge(mergeID: String, source: RaveID, target: RaveID, merges: MergedUsers) async throws -> Bool {
        try await pool.transaction { transaction in
            guard try await !transaction.execute(Self.recordMerge, [mergeID, source, target]).isEmpty else {
                return false
            }
            let target = try await merges.record(mergeID: mergeID, source: source, target: target, in: transaction)
            for statement in Self.moves { try await transaction.execute(statement, [source, target]) }
            return true
        }
    }

    /// Moves whatever the source still holds (rows a call wrote under the source while the merge ran elsewhere).
    func sweep(source: RaveID, target: RaveID) async throws {
        try await pool.transaction { transaction in
            for statement in Self.moves { try await transaction.execute(statement, [source, target]) }
        }
    }
}
