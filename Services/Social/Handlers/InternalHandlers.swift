import RaveMessages
import RavePostgres
import RaveRPC

/// `rave.social.v1.SocialInternal`: what leaderboards and gifts ask.
final class InternalHandlers: SocialV1.SocialInternalHandler {
    let dependencies: SocialDependencies

    init(dependencies: SocialDependencies) {
        self.dependencies = dependencies
    }

    func friendIds(
        _ request: SocialV1.FriendIdsRequest, context: RequestContext
    ) async throws -> SocialV1.FriendIdsResponse {
        let owner = try await dependencies.user(request.userId, field: "user_id")
        let appID = try RequestLimits.userID(request.appId, field: "app_id")
        let list = try await dependencies.lists.resolve(
            request.listKey.isEmpty ? "friends" : request.listKey, appID: appID, kind: .friends)
        let ids = try await dependencies.friendIDs.friendIDs(listID: list.id, owner: owner) {
            try await dependencies.queries.peerIDs(list: list, owner: owner, direction: .friend)
        }
        return SocialV1.FriendIdsResponse(userIds: ids.map(\.hex))
    }

    func followingIds(
        _ request: SocialV1.FollowingIdsRequest, context: RequestContext
    ) async throws -> SocialV1.FollowingIdsResponse {
        let owner = try await dependencies.user(request.userId, field: "user_id")
        let appID = try RequestLimits.userID(request.appId, field: "app_id")
        let list = try await dependencies.lists.resolve(
            request.listKey.isEmpty ? "followers" : request.listKey, appID: appID, kind: .followers)
        // Not cached: follows change at thousands per second, and a NOTIFY per write would serialize their commits.
        let ids = try await dependencies.queries.peerIDs(list: list, owner: owner, direction: .following)
        return SocialV1.FollowingIdsResponse(userIds: ids.map(\.hex))
    }

    func isBlocked(
        _ request: SocialV1.IsBlockedRequest, context: RequestContext
    ) async throws -> SocialV1.IsBlockedResponse {
        let user = try await dependencies.user(request.userId, field: "user_id")
        let other = try await dependencies.user(request.otherUserId, field: "other_user_id")
        let (userBlocked, otherBlocked) = try await dependencies.blocks.blocks(between: user, and: other)
        return SocialV1.IsBlockedResponse(
            blocked: userBlocked || otherBlocked, userBlockedOther: userBlocked, otherBlockedUser: otherBlocked)
    }
}
