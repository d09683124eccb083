import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.erasure.v1.ErasureParticipant`: identity's deletion saga erases a deleted account's gifts here.
final class GiftsErasureParticipant: ErasureV1.ErasureParticipantHandler {
    let dependencies: GiftsDependencies

    init(dependencies: GiftsDependencies) {
        self.dependencies = dependencies
    }

    /// Erases what the user and its merged ids received, asked for and shared, and names the tombstone in what
    /// they gave other users (docs/gifts.md, "Deleting an account"); repeating an erasure id changes nothing.
    ///
    /// From the start of the call calls naming the user are refused in this process; the rows go once every call
    /// that named it earlier has finished, so none of their gifts is left behind.
    func eraseUser(
        _ request: ErasureV1.EraseUserRequest, context: RequestContext
    ) async throws -> ErasureV1.EraseUserResponse {
        let merges = dependencies.mergedUsers
        return try await UserErasure.answer(request, refusingIn: merges) { erasure in
            try await dependencies.erasures.erase(erasure, merges: merges)
        }
    }
}
