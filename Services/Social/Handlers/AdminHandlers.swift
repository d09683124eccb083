import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime

/// `rave.social.v1.SocialAdmin`: operators create custom lists.
final class AdminHandlers: SocialV1.SocialAdminHandler {
    let dependencies: SocialDependencies

    init(dependencies: SocialDependencies) {
        self.dependencies = dependencies
    }

    func createList(
        _ request: SocialV1.CreateListRequest, context: RequestContext
    ) async throws -> SocialV1.CreateListResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let appID = try RequestLimits.userID(request.appId, field: "app_id")
        let kind: RelationshipList.Kind
        switch request.kind {
        case .friends: kind = .friends
        case .followers: kind = .followers
        case .unspecified, .unrecognized: throw SocialError.invalidArgument("kind must be friends or followers")
        }
        let global: Bool
        switch request.scope {
        case .application: global = false
        case .global: global = true
        case .unspecified, .unrecognized: throw SocialError.invalidArgument("scope must be application or global")
        }
        let maxMembers = try RequestLimits.maxMembers.check(request.maxMembers, orThrow: SocialError.invalidArgument)
        let list = try await dependencies.withinDeadline(of: context) {
            try await dependencies.lists.create(
                key: request.key, kind: kind, global: global, appID: appID,
                maxMembers: maxMembers == 0 ? nil : maxMembers)
        }
        return SocialV1.CreateListResponse(list: list.message)
    }

    func getLists(
        _ request: SocialV1.GetListsRequest, context: RequestContext
    ) async throws -> SocialV1.GetListsResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let appID = try RequestLimits.userID(request.appId, field: "app_id")
        return SocialV1.GetListsResponse(lists: try await dependencies.lists.visibleLists(appID: appID).map(\.message))
    }
}
