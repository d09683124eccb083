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
        // Calls naming the user are refused from the start, so none of their relationships is left behind.
        let merges = dependencies.mergedUsers
        return try await UserErasure.answer(request, refusingIn: merges) { erasure in
            let rows = try await dependencies.erasures.erase(erasure, merges: merges)
            dependencies.friendIDs.invalidateAll()
            return rows
        }
    }
}
