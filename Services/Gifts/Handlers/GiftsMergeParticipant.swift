import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.merge.v1.MergeParticipant`: identity's merge saga unites two players' gifts here.
final class GiftsMergeParticipant: MergeV1.MergeParticipantHandler {
    let dependencies: GiftsDependencies

    init(dependencies: GiftsDependencies) {
        self.dependencies = dependencies
    }

    /// Gives the target every gift, request and share of the source; repeating a merge id changes nothing.
    func mergeUsers(
        _ request: MergeV1.MergeUsersRequest, context: RequestContext
    ) async throws -> MergeV1.MergeUsersResponse {
        guard (1...128).contains(request.mergeId.utf8.count) else {
            throw GiftsError.invalidArgument("merge_id must be 1…128 bytes")
        }
        let source = try RequestLimits.id(request.sourceUserId, field: "source_user_id")
        let target = try RequestLimits.id(request.targetUserId, field: "target_user_id")
        guard source != target else { throw GiftsError.invalidArgument("cannot merge a user into itself") }
        // From here the source resolves to the target in this process; the rows move once every call that resolved
        // it earlier has finished, so none of their gifts is left behind.
        await dependencies.mergedUsers.redirect(source: source, target: target)
        let applied = try await dependencies.merges.merge(
            mergeID: request.mergeId, source: source, target: target, merges: dependencies.mergedUsers)
        return MergeV1.MergeUsersResponse(alreadyApplied: !applied)
    }
}
