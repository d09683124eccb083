import RaveEvents
import RaveMerges
import RavePostgres

/// Erases a deleted account's gifts (docs/gifts.md, "Deleting an account"), once per erasure id.
///
/// What the user received, asked for, shared and created goes; what other users hold keeps its place with the
/// tombstone instead of the user: a gift the user sent stays with its recipient (whatever its state), a request
/// another user made of the user stays with that user once granted (its gift is theirs), a gift another user's
/// invitation delivered to the user stays in that user's invitation, and other users' idempotency records of
/// calls that named the user name the tombstone (a replay of such a call is then refused as different content).
struct ErasureStore: Sendable {
    let pool: PostgresPool

    /// Gifts received by the ids, except one another user's invitation delivered, with the requests the ids made
    /// (a granted request and its gift name each other, so they go in one statement) and those made of them that
    /// were not granted.
    private static let deleteReceived = PostgresStatement(
        name: "gifts_erase_received",
        sql: """
            WITH requests AS (
                DELETE FROM gift_requests
                WHERE requester_id = ANY($1::uuid[]) OR (recipient_id = ANY($1::uuid[]) AND gift_id IS NULL)
                RETURNING id),
            gifts AS (
                DELETE FROM gifts g
                WHERE g.recipient_id = ANY($1::uuid[])
                    AND NOT EXISTS (
                        SELECT 1 FROM external_gifts e WHERE e.gift_id = g.id AND e.sender_id <> ALL($1::uuid[]))
                RETURNING id)
            SELECT (SELECT count(*) FROM requests) + (SELECT count(*) FROM gifts)
            """)
    private static let steps = [
        ErasureStep.delete(from: "external_gifts", where: "sender_id", service: "gifts"),
        ErasureStep.delete(from: "install_links", where: "creator_id", service: "gifts"),
        ErasureStep.delete(from: "daily_sends", where: "sender_id", service: "gifts"),
        ErasureStep.delete(from: "idempotent_calls", where: "sender_id", service: "gifts"),
        ErasureStep.replace(in: "gifts", column: "sender_id", service: "gifts"),
        ErasureStep.replace(in: "gifts", column: "recipient_id", service: "gifts"),
        ErasureStep.replace(in: "gift_requests", column: "recipient_id", service: "gifts"),
        ErasureStep.rewrite(in: "idempotent_calls", column: "fingerprint", service: "gifts"),
        ErasureStep.rewrite(in: "idempotent_calls", column: "response", service: "gifts"),
        ErasureStep.replace(in: "applied_merges", column: "source_id", service: "gifts"),
        ErasureStep.replace(in: "applied_merges", column: "target_id", service: "gifts"),
    ]

    /// Applies the erasure; nil when this erasure id was applied before (nothing changes then), else the rows
    /// erased or anonymised.
    func erase(_ erasure: UserErasure, merges: MergedUsers) async throws -> Int? {
        try await pool.transaction { transaction in
            guard let erased = try await merges.beginErasure(erasure, in: transaction) else { return nil }
            return try await erase(erased, in: transaction) + erased.mergedRows
        }
    }

    /// Erases what a call of this process wrote under the ids while another replica applied their erasure.
    func sweep(_ erased: ErasedIDs) async throws {
        try await pool.transaction { transaction in _ = try await erase(erased, in: transaction) }
    }

    private func erase(_ erased: ErasedIDs, in transaction: PostgresTransaction) async throws -> Int {
        // The user's own external gifts go before the gifts they delivered are judged.
        let shares = try await erased.apply(Array(Self.steps.prefix(1)), in: transaction)
        let received = try await transaction.execute(Self.deleteReceived, [erased.ids])[0].decode(Int.self, at: 0)
        return try await shares + received + erased.apply(Array(Self.steps.dropFirst()), in: transaction)
            + EventOutbox.forget(naming: erased.ids, in: transaction)
    }
}
