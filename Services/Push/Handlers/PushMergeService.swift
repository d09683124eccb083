import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// rave.merge.v1.MergeParticipant: the source user's device tokens and inbox move to the target.
struct PushMergeService: MergeV1.MergeParticipantHandler {
    let dependencies: PushDependencies

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

    init(dependencies: PushDependencies) {
        self.dependencies = dependencies
        // Merges another push process applied: move what calls here wrote under the source meanwhile.
        let pool = dependencies.pool
        dependencies.merges.onSweep { source, target in
            try await pool.transaction { transaction in try await Self.move(source, into: target, in: transaction) }
        }
    }

    /// Moves the source's tokens and inbox to the target; repeating a merge id changes nothing.
    ///
    /// From the start of the call the source resolves to the target in this process; the rows move once every call
    /// that resolved it earlier has finished (`MergedUsers.redirect`), so no token or notification is left behind.
    func mergeUsers(
        _ request: MergeV1.MergeUsersRequest, context: RequestContext
    ) async throws -> MergeV1.MergeUsersResponse {
        let source = try PushDependencies.raveID(request.sourceUserId, field: "source_user_id")
        let target = try PushDependencies.raveID(request.targetUserId, field: "target_user_id")
        guard source != target, !request.mergeId.isEmpty else {
            throw PushError.invalidArgument("a merge needs a merge_id and two different users")
        }
        let merges = dependencies.merges
        await merges.redirect(source: source, target: target)
        let applied = try await dependencies.pool.transaction { transaction in
            guard !(try await transaction.execute(Self.recordMerge, [request.mergeId, source, target])).isEmpty else {
                return true
            }
            let target = try await merges.record(
                mergeID: request.mergeId, source: source, target: target, in: transaction)
            try await Self.move(source, into: target, in: transaction)
            return false
        }
        return MergeV1.MergeUsersResponse(alreadyApplied: applied)
    }

    private static func move(_ source: RaveID, into target: RaveID, in transaction: PostgresTransaction) async throws {
        try await transaction.execute(Self.moveTokens, [source, target])
        try await transaction.execute(Self.copyInbox, [source, target])
        try await transaction.execute(Self.deleteInbox, [source])
    }
}
