import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.erasure.v1.ErasureParticipant`: identity's deletion saga erases a deleted account's graph here.
final class SocialErasureParticipant: ErasureV1.ErasureParticipantHandler {
    let dependencies: SocialDependencies

    init(dependencies: SocialDependencies) {
        self.dependencies = dependencies
    }

    /// Erases the user's and its merged ids' relationships, requests, blocks and contacts (docs/social.md,
    /// "Deleting an account"); repeating an erasure id changes nothing.
    func eraseUser(
        _ request: ErasureV1.EraseUserRequest, context: RequestContext
    ) async throws -> ErasureV1.EraseUserResponse {
        let erasure = try UserErasure(
            erasureID: request.erasureId, userID: request.userId, mergedUserIDs: request.mergedUserIds,
            tombstoneID: request.tombstoneId)
        // From here calls naming the user are refused in this process; the rows go once every call that named it
        // earlier has finished, so none of their relationships is left behind.
        try await dependencies.mergedUsers.refuse(erasure)
        let rows = try await dependencies.erasures.erase(erasure, merges: dependencies.mergedUsers)
        dependencies.friendIDs.invalidateAll()
        return ErasureV1.EraseUserResponse(alreadyApplied: rows == nil, rowsAffected: UInt64(rows ?? 0))
    }
}
