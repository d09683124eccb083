import RaveMessages
import RavePostgres
import RaveRPC

/// `rave.social.v1.SocialInternal`: what leaderboards and gifts ask.
final class InternalHandlers: SocialV1.SocialInternalHandler {
    let service: SocialService

    init(service: SocialService) {
        self.service = service
    }

    func friendIds(
        _ request: SocialV1.FriendIdsRequest, context: RequestContext
    ) async throws -> SocialV1.FriendIdsResponse {
        try context.requireService()
        let ids = try await peerIDs(
            user: request.userId, app: request.appId, key: request.listKey.isEmpty ? "friends" : request.listKey,
            kind: .friends, direction: .friend)
        return SocialV1.FriendIdsResponse(userIds: ids)
    }

    func followingIds(
        _ request: SocialV1.FollowingIdsRequest, context: RequestContext
    ) async throws -> SocialV1.FollowingIdsResponse {
        try context.requireService()
        let ids = try await peerIDs(
            user: request.userId, app: request.appId, key: request.listKey.isEmpty ? "followers" : request.listKey,
            kind: .followers, direction: .following)
        return SocialV1.FollowingIdsResponse(userIds: ids)
    }

    func isBlocked(
        _ request: SocialV1.IsBlockedRequest, context: RequestContext
    ) async throws -> SocialV1.IsBlockedResponse {
        try context.requireService()
        let user = try RequestLimits.userID(request.userId, field: "user_id")
        let other = try RequestLimits.userID(request.otherUserId, field: "other_user_id")
        let (userBlocked, otherBlocked) = try await service.blocks.blocks(between: user, and: other)
        return SocialV1.IsBlockedResponse(
            blocked: userBlocked || otherBlocked, userBlockedOther: userBlocked, otherBlockedUser: otherBlocked)
    }

    private func peerIDs(
        user: String, app: String, key: String, kind: RelationshipList.Kind, direction: EdgeDirection
    ) async throws -> [String] {
        let userID = try RequestLimits.userID(user, field: "user_id")
        let appID = try RequestLimits.userID(app, field: "app_id")
        let list = try await service.lists.resolve(key, appID: appID, kind: kind)
        return try await service.queries.peerIDs(list: list, owner: userID, direction: direction)
    }
}
