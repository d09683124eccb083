import RaveMessages
import RaveRPC

/// The operator reads of `rave.social.v1.SocialAdmin`: a player's counts, from the queries the player methods run.
extension AdminHandlers {
    func getUserCounts(
        _ request: SocialV1.GetUserCountsRequest, context: RequestContext
    ) async throws -> SocialV1.GetUserCountsResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let appID = try RequestLimits.userID(request.appId, field: "app_id")
        let user = try await dependencies.user(request.userId, field: "user_id")
        let store = dependencies.relationships
        let queries = dependencies.queries
        var response = SocialV1.GetUserCountsResponse(userId: user.hex)
        for list in try await dependencies.lists.visibleLists(appID: appID) {
            var counts = SocialV1.ListCounts(listKey: list.key, kind: list.kind.message)
            switch list.kind {
            case .friends:
                counts.friends = UInt32(clamping: try await store.count(list: list, owner: user, direction: .friend))
                // One row is enough: each carries the total.
                counts.incomingRequests = UInt32(
                    clamping: try await queries.requests(list: list, user: user, incoming: true, offset: 0, limit: 1)
                        .total)
                counts.outgoingRequests = UInt32(
                    clamping: try await queries.requests(list: list, user: user, incoming: false, offset: 0, limit: 1)
                        .total)
            case .followers:
                counts.followers = UInt32(
                    clamping: try await store.count(list: list, owner: user, direction: .follower))
                counts.following = UInt32(
                    clamping: try await store.count(list: list, owner: user, direction: .following))
            }
            response.lists.append(counts)
        }
        response.blocked = UInt32(clamping: try await queries.blockedUsers(by: user, offset: 0, limit: 1).total)
        return response
    }
}
