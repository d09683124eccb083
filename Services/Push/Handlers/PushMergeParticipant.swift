import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// rave.merge.v1.MergeParticipant: the source user's device tokens and inbox move to the target.
struct PushMergeParticipant: MergeV1.MergeParticipantHandler {
    let dependencies: PushDependencies
    let store = MergeStore()

    init(dependencies: PushDependencies) {
        self.dependencies = dependencies
        // Merges another push process applied: move what calls here wrote under the source meanwhile.
        let pool = dependencies.pool
        let store = self.store
        dependencies.merges.onSweep { source, target in
            try await pool.transaction { transaction in try await store.move(source, into: target, in: transaction) }
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
        let store = self.store
        await merges.redirect(source: source, target: target)
        let applied = try await dependencies.pool.transaction { transaction in
            guard try await store.record(mergeID: request.mergeId, source: source, target: target, in: transaction)
            else { return true }
            let target = try await merges.record(
                mergeID: request.mergeId, source: source, target: target, in: transaction)
            try await store.move(source, into: target, in: transaction)
            return false
        }
        return MergeV1.MergeUsersResponse(alreadyApplied: applied)
    }
}
