import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.merge.v1.MergeParticipant`: identity's merge saga unites two players' graphs here.
final class SocialMergeParticipant: MergeV1.MergeParticipantHandler {
    let dependencies: SocialDependencies

    init(dependencies: SocialDependencies) {
        self.dependencies = dependencies
    }

    /// Unites the source's friends, followers, requests, contacts and blocks into the target; repeating a merge id
    /// changes nothing.
    func mergeUsers(
        _ request: MergeV1.MergeUsersRequest, context: RequestContext
    ) async throws -> MergeV1.MergeUsersResponse {
        guard (1...128).contains(request.mergeId.utf8.count) else {
            throw SocialError.invalidArgument("merge_id must be 1…128 bytes")
        }
        let source = try RequestLimits.userID(request.sourceUserId, field: "source_user_id")
        let target = try RequestLimits.userID(request.targetUserId, field: "target_user_id")
        guard source != target else { throw SocialError.invalidArgument("cannot merge a user into itself") }
        // From here the source resolves to the target in this process; the rows move once every call that resolved
        // it earlier has finished, so none of their relationships is left behind.
        await dependencies.mergedUsers.redirect(source: source, target: target)
        let applied = try await dependencies.merges.merge(
            mergeID: request.mergeId, source: source, target: target, merges: dependencies.mergedUsers)
        if applied { dependencies.friendIDs.invalidateAll() }
        return MergeV1.MergeUsersResponse(alreadyApplied: !applied)
    }
}
