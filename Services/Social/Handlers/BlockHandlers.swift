import RaveMessages
import RavePostgres
import RaveRPC

/// Blocks: a blocked pair has no relationships or requests in any list, and the gifts service asks `IsBlocked`.
extension PlayerHandlers {
    func blockUser(
        _ request: SocialV1.BlockUserRequest, context: RequestContext
    ) async throws -> SocialV1.BlockUserResponse {
        let player = try await dependencies.player(context)
        let target = try await dependencies.target(request.target, player: player)
        try await dependencies.withinDeadline(of: context) {
            try await dependencies.blocks.block(target.userID, by: player.userID)
        }
        dependencies.friendIDs.invalidate([player.userID, target.userID])
        return SocialV1.BlockUserResponse(userId: target.userID.hex)
    }

    func unblockUser(
        _ request: SocialV1.UnblockUserRequest, context: RequestContext
    ) async throws -> SocialV1.UnblockUserResponse {
        let player = try await dependencies.player(context)
        let blocked = try await dependencies.user(request.userId, field: "user_id")
        guard try await dependencies.blocks.unblock(blocked, by: player.userID) else {
            throw SocialError.notFound("you have not blocked \(blocked.hex)")
        }
        return SocialV1.UnblockUserResponse()
    }

    func listBlockedUsers(
        _ request: SocialV1.ListBlockedUsersRequest, context: RequestContext
    ) async throws -> SocialV1.ListBlockedUsersResponse {
        let player = try await dependencies.player(context)
        let limit = try RequestLimits.pageSize(request.limit)
        let offset = try RequestLimits.offset(request.offset)
        let (rows, total) = try await dependencies.queries.blockedUsers(by: player.userID, offset: offset, limit: limit)
        return SocialV1.ListBlockedUsersResponse(
            users: try await dependencies.profiles.present(rows, appID: player.appID),
            totalCount: UInt32(clamping: total))
    }
}
