import RaveMessages
import RavePostgres
import RaveRPC

/// What operators set up, read back within their publisher scope: publishers, applications and mail templates
/// (docs/identity.md, "Publishers and applications").
extension AdminHandlers {
    func listPublishers(
        _ request: IdentityV1.ListPublishersRequest, context: RequestContext
    ) async throws -> IdentityV1.ListPublishersResponse {
        let actor = try await dependencies.admin(context)
        let limit = try RequestLimits.publisherPageSize.check(request.pageSize, orThrow: IdentityError.invalidArgument)
        let cursor = try PageCursor.parse(request.pageToken, method: "ListPublishers")
        // An operator of one publisher sees that one; an owner of all publishers (or the certificate) every one.
        let only = actor.grant?.publisherID.flatMap { RaveID($0) }
        if actor.grant?.publisherID != nil, only == nil {
            throw IdentityError.permissionDenied("this operator's publisher scope is not a publisher id")
        }
        let page = try await ApplicationStore(database: dependencies.pool).publishers(
            only: only, after: cursor, limit: limit)
        return IdentityV1.ListPublishersResponse(publishers: page.publishers, nextPageToken: page.next?.token ?? "")
    }

    func listApplications(
        _ request: IdentityV1.ListApplicationsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListApplicationsResponse {
        let actor = try await dependencies.admin(context)
        let publisher = try Validation.raveID(request.publisherId, field: "publisher_id")
        try actor.requirePublisher(publisher)
        let limit = try RequestLimits.applicationPageSize.check(
            request.pageSize, orThrow: IdentityError.invalidArgument)
        let cursor = try PageCursor.parse(request.pageToken, method: "ListApplications")
        let page = try await ApplicationStore(database: dependencies.pool).applications(
            of: publisher, after: cursor, limit: limit)
        return IdentityV1.ListApplicationsResponse(
            applications: page.applications.map(\.message), nextPageToken: page.next?.token ?? "")
    }

    func listMailTemplates(
        _ request: IdentityV1.ListMailTemplatesRequest, context: RequestContext
    ) async throws -> IdentityV1.ListMailTemplatesResponse {
        let actor = try await dependencies.admin(context)
        let appID = try Validation.raveID(request.appId, field: "app_id")
        try actor.requirePublisher(try await dependencies.applications.application(appID).publisherID)
        return IdentityV1.ListMailTemplatesResponse(
            templates: try await MailStore(database: dependencies.pool).templates(appID: appID))
    }
}
