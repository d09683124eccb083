import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// The merge status a player may see: merges of their own account.
extension PlayerHandlers {
    func getMergeStatus(
        _ request: IdentityV1.GetMergeStatusRequest, context: RequestContext
    ) async throws -> IdentityV1.GetMergeStatusResponse {
        let (userID, _) = try await dependencies.player(context)
        let id = try Validation.raveID(request.mergeId, field: "merge_id")
        guard let merge = try await MergeStore(database: dependencies.pool).merge(id),
            let target = RaveID(merge.targetUserId),
            try await UserStore(database: dependencies.pool).canonicalIDs([target])[target] == userID
        else {
            // Someone else's merge and no merge at all look alike.
            throw IdentityError.notFound("no merge \(id.hex) of this account")
        }
        return IdentityV1.GetMergeStatusResponse(merge: merge)
    }
}
