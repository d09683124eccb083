import RaveMessages
import RavePostgres
import RaveRPC

/// Blocks: a blocked pair has no relationships or requests in any list, and the gifts service asks `IsBlocked`.
extension PlayerHandlers {
    func blockUser(
        _ request: SocialV1.BlockUserRequest, context: RequestContext
    ) async throws -> SocialV1.BlockUserResponse {
        let player = try await service.player(context)
        let target = try await service.target(request.target, player: player)
        try await service.withinDeadline(of: context) {
            try await service.blocks.block(target.userID, by: player.userID)
        }
        service.friendIDs.invalidate([player.userID, target.userID])
        return SocialV1.BlockUserResponse(userId: target.userID.hex)
    }

    func unblockUser(
        _ request: SocialV1.UnblockUserRequest, context: RequestContext
    ) async throws -> SocialV1.UnblockUserResponse {
        let player = try await service.player(context)
        let blocked = try await service.user(request.userId, field: "user_id")
        guard try await service.blocks.unblock(blocked, by: player.userID) else {
            throw SocialError.notFound("you have not blocked \(blocked.hex)")
        }
        return SocialV1.UnblockUserResponse()
    }

    func listBlockedUsers(
        _ request: SocialV1.ListBlockedUsersRequest, context: RequestContext
    ) async throws -> SocialV1.ListBlockedUsersResponse {
        let player = try await service.player(context)
        let limit = try RequestLimits.pageSize(request.limit)
        let offset = try RequestLimits.offset(request.offset)
        let (rows, total) = try await service.queries.blockedUsers(by: player.userID, offset: offset, limit: limit)
        return SocialV1.ListBlockedUsersResponse(
            users: try await service.profiles.present(rows, appID: player.appID), totalCount: UInt32(clamping: total))
    }
}
