import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.social.v1.Social`: the player methods.
///
/// Friends here; followers, blocks and contacts in the files beside.
final class PlayerHandlers: SocialV1.SocialHandler {
    let dependencies: SocialDependencies

    init(dependencies: SocialDependencies) {
        self.dependencies = dependencies
    }

    func sendFriendRequest(
        _ request: SocialV1.SendFriendRequestRequest, context: RequestContext
    ) async throws -> SocialV1.SendFriendRequestResponse {
        let player = try await dependencies.player(context)
        let list = try await dependencies.lists.resolve(request.listKey, appID: player.appID, kind: .friends)
        let target = try await dependencies.target(request.target, player: player)
        let profiles = try await dependencies.directory.profiles(of: [player.userID, target.userID], appID: list.appID)
        let names = SortNames(names: profiles.mapValues { $0.displayName.lowercased() })
        // The event shows the sender as the caller's application does; a global list sorts by the global name.
        let sender =
            list.appID == player.appID
            ? profiles[player.userID]
            : try await dependencies.directory.profiles(of: [player.userID], appID: player.appID)[player.userID]
        let outcome = try await dependencies.withinDeadline(of: context) {
            try await dependencies.relationships.sendFriendRequest(
                list: list, sender: player.userID, recipient: target.userID, names: names, appID: player.appID,
                senderDisplayName: sender?.displayName ?? "")
        }
        if outcome == .accepted { dependencies.friendIDs.invalidate([player.userID, target.userID]) }
        return SocialV1.SendFriendRequestResponse(
            outcome: outcome == .accepted ? .accepted : .sent, userId: target.userID.hex)
    }

    func acceptFriendRequest(
        _ request: SocialV1.AcceptFriendRequestRequest, context: RequestContext
    ) async throws -> SocialV1.AcceptFriendRequestResponse {
        let player = try await dependencies.player(context)
        let list = try await dependencies.lists.resolve(request.listKey, appID: player.appID, kind: .friends)
        let sender = try await dependencies.user(request.userId, field: "user_id")
        let names = try await dependencies.profiles.sortNames(of: [sender, player.userID], list: list)
        try await dependencies.withinDeadline(of: context) {
            try await dependencies.relationships.acceptFriendRequest(
                list: list, sender: sender, recipient: player.userID, names: names)
        }
        dependencies.friendIDs.invalidate([sender, player.userID])
        return SocialV1.AcceptFriendRequestResponse()
    }

    func rejectFriendRequest(
        _ request: SocialV1.RejectFriendRequestRequest, context: RequestContext
    ) async throws -> SocialV1.RejectFriendRequestResponse {
        let player = try await dependencies.player(context)
        let list = try await dependencies.lists.resolve(request.listKey, appID: player.appID, kind: .friends)
        let sender = try await dependencies.user(request.userId, field: "user_id")
        guard
            try await dependencies.relationships.deleteFriendRequest(
                list: list, sender: sender, recipient: player.userID)
        else {
            throw SocialError.notFound("no pending friend request from \(sender.hex) in list \"\(list.key)\"")
        }
        return SocialV1.RejectFriendRequestResponse()
    }

    func cancelFriendRequest(
        _ request: SocialV1.CancelFriendRequestRequest, context: RequestContext
    ) async throws -> SocialV1.CancelFriendRequestResponse {
        let player = try await dependencies.player(context)
        let list = try await dependencies.lists.resolve(request.listKey, appID: player.appID, kind: .friends)
        let recipient = try await dependencies.user(request.userId, field: "user_id")
        guard
            try await dependencies.relationships.deleteFriendRequest(
                list: list, sender: player.userID, recipient: recipient)
        else {
            throw SocialError.notFound("no pending friend request to \(recipient.hex) in list \"\(list.key)\"")
        }
        return SocialV1.CancelFriendRequestResponse()
    }

    func removeFriend(
        _ request: SocialV1.RemoveFriendRequest, context: RequestContext
    ) async throws -> SocialV1.RemoveFriendResponse {
        let player = try await dependencies.player(context)
        let list = try await dependencies.lists.resolve(request.listKey, appID: player.appID, kind: .friends)
        let friend = try await dependencies.user(request.userId, field: "user_id")
        guard try await dependencies.relationships.removeFriend(list: list, user: player.userID, friend: friend) else {
            throw SocialError.notFound("\(friend.hex) is not a friend in list \"\(list.key)\"")
        }
        dependencies.friendIDs.invalidate([player.userID, friend])
        return SocialV1.RemoveFriendResponse()
    }

    func listFriendRequests(
        _ request: SocialV1.ListFriendRequestsRequest, context: RequestContext
    ) async throws -> SocialV1.ListFriendRequestsResponse {
        let player = try await dependencies.player(context)
        let limit = try RequestLimits.pageSize(request.limit)
        let offset = try RequestLimits.offset(request.offset)
        let incoming: Bool
        switch request.direction {
        case .incoming: incoming = true
        case .outgoing: incoming = false
        case .unrecognized(let value): throw SocialError.invalidArgument("direction \(value) is not known")
        }
        let list = try await dependencies.lists.resolve(request.listKey, appID: player.appID, kind: .friends)
        let (rows, total) = try await dependencies.queries.requests(
            list: list, user: player.userID, incoming: incoming, offset: offset, limit: limit)
        return SocialV1.ListFriendRequestsResponse(
            users: try await dependencies.profiles.present(rows, appID: player.appID),
            totalCount: UInt32(clamping: total))
    }

    func queryFriends(
        _ request: SocialV1.QueryFriendsRequest, context: RequestContext
    ) async throws -> SocialV1.QueryFriendsResponse {
        let player = try await dependencies.player(context)
        return SocialV1.QueryFriendsResponse(
            page: try await dependencies.page(request.query, kind: .friends, direction: .friend, player: player))
    }
}
