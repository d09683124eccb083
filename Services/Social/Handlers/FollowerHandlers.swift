import RaveMessages
import RavePostgres
import RaveRPC

/// Followers: one-way relationships; following back makes a second relationship, never a friendship.
extension PlayerHandlers {
    func follow(_ request: SocialV1.FollowRequest, context: RequestContext) async throws -> SocialV1.FollowResponse {
        let player = try await dependencies.player(context)
        let list = try await dependencies.lists.resolve(request.listKey, appID: player.appID, kind: .followers)
        let target = try await dependencies.target(request.target, player: player)
        let names = try await dependencies.profiles.sortNames(of: [player.userID, target.userID], list: list)
        let created = try await dependencies.relationships.follow(
            list: list, follower: player.userID, followee: target.userID, names: names)
        return SocialV1.FollowResponse(userId: target.userID.hex, created: created)
    }

    func unfollow(
        _ request: SocialV1.UnfollowRequest, context: RequestContext
    ) async throws -> SocialV1.UnfollowResponse {
        let player = try await dependencies.player(context)
        let list = try await dependencies.lists.resolve(request.listKey, appID: player.appID, kind: .followers)
        let followee = try await dependencies.user(request.userId, field: "user_id")
        guard try await dependencies.relationships.unfollow(list: list, follower: player.userID, followee: followee)
        else {
            throw SocialError.notFound("you do not follow \(followee.hex) in list \"\(list.key)\"")
        }
        return SocialV1.UnfollowResponse()
    }

    func queryFollowers(
        _ request: SocialV1.QueryFollowersRequest, context: RequestContext
    ) async throws -> SocialV1.QueryFollowersResponse {
        let player = try await dependencies.player(context)
        return SocialV1.QueryFollowersResponse(
            page: try await dependencies.page(request.query, kind: .followers, direction: .follower, player: player))
    }

    func queryFollowing(
        _ request: SocialV1.QueryFollowingRequest, context: RequestContext
    ) async throws -> SocialV1.QueryFollowingResponse {
        let player = try await dependencies.player(context)
        return SocialV1.QueryFollowingResponse(
            page: try await dependencies.page(request.query, kind: .followers, direction: .following, player: player))
    }

    func getRelationshipCounts(
        _ request: SocialV1.GetRelationshipCountsRequest, context: RequestContext
    ) async throws -> SocialV1.GetRelationshipCountsResponse {
        let player = try await dependencies.player(context)
        var user = player.userID
        if !request.userId.isEmpty { user = try await dependencies.user(request.userId, field: "user_id") }
        let list = try await dependencies.lists.resolve(request.listKey, appID: player.appID)
        let store = dependencies.relationships
        switch list.kind {
        case .friends:
            return SocialV1.GetRelationshipCountsResponse(
                friends: UInt32(clamping: try await store.count(list: list, owner: user, direction: .friend)))
        case .followers:
            return SocialV1.GetRelationshipCountsResponse(
                followers: UInt32(clamping: try await store.count(list: list, owner: user, direction: .follower)),
                following: UInt32(clamping: try await store.count(list: list, owner: user, direction: .following)))
        }
    }
}
