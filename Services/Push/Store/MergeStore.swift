import RaveMessages
import RavePostgres

/// Merges applied here, and the moves of a source user's device tokens and inbox to the target.
struct MergeStore: Sendable {
    static let recordMerge = PostgresStatement(
        name: "push_record_merge",
        sql: """
            INSERT INTO merges (merge_id, source_user_id, target_user_id) VALUES ($1, $2, $3)
            ON CONFLICT (merge_id) DO NOTHING RETURNING merge_id
            """)
    static let moveTokens = PostgresStatement(
        name: "push_merge_tokens", sql: "UPDATE device_tokens SET user_id = $2 WHERE user_id = $1")
    // The target keeps its own entry (and read flag) when both users got the same notification.
    static let copyInbox = PostgresStatement(
        name: "push_merge_copy_inbox",
        sql: """
            INSERT INTO inbox_entries (user_id, notification_id, app_id, read, created_at)
            SELECT $2, notification_id, app_id, read, created_at FROM inbox_entries WHERE user_id = $1
            ON CONFLICT DO NOTHING
            """)
    static let deleteInbox = PostgresStatement(
        name: "push_merge_delete_inbox", sql: "DELETE FROM inbox_entries WHERE user_id = $1")

    /// Records the merge; false when this merge id was recorded before (the merge is applied already).
    func record(
        mergeID: String, source: RaveID, target: RaveID, in transaction: PostgresTransaction
    ) async throws -> Bool {
        !(try await transaction.execute(Self.recordMerge, [mergeID, source, target])).isEmpty
    }

    /// Gives the target the source's device tokens and inbox entries.
    func move(_ source: RaveID, into target: RaveID, in transaction: PostgresTransaction) async throws {
        try await transaction.execute(Self.moveTokens, [source, target])
        try await transaction.execute(Self.copyInbox, [source, target])
        try await transaction.execute(Self.deleteInbox, [source])
    }
}
