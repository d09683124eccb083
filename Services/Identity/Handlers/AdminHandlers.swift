import RaveMessages
import RaveRPC
import RaveServices

/// Serves `rave.identity.v1.IdentityAdmin`: publishers and applications, for the admin certificate and for operators
/// whose role reaches the method and whose publisher scope covers the publisher or application named
/// (`IdentityDependencies.admin`; users, bans and the audit log are `AdminHandlers+Users.swift`, operators
/// `AdminHandlers+Operators.swift`).
struct AdminHandlers: IdentityV1.IdentityAdminHandler {
    let dependencies: IdentityDependencies

    private var store: ApplicationStore { ApplicationStore(database: dependencies.pool) }

    func createPublisher(
        _ request: IdentityV1.CreatePublisherRequest, context: RequestContext
    ) async throws -> IdentityV1.CreatePublisherResponse {
        try await dependencies.admin(context).requireAllPublishers("CreatePublisher")
        let name = try Validation.text(request.name, field: "name", maximum: 100)
        return IdentityV1.CreatePublisherResponse(publisher: try await store.createPublisher(name: name))
    }

    func updatePublisher(
        _ request: IdentityV1.UpdatePublisherRequest, context: RequestContext
    ) async throws -> IdentityV1.UpdatePublisherResponse {
        let actor = try await dependencies.admin(context)
        let id = try Validation.raveID(request.publisherId, field: "publisher_id")
        try actor.requirePublisher(id)
        let name = try Validation.text(request.name, field: "name", maximum: 100)
        return IdentityV1.UpdatePublisherResponse(publisher: try await store.updatePublisher(id: id, name: name))
    }

    func createApplication(
        _ request: IdentityV1.CreateApplicationRequest, context: RequestContext
    ) async throws -> IdentityV1.CreateApplicationResponse {
        let actor = try await dependencies.admin(context)
        let publisherID = try Validation.raveID(request.publisherId, field: "publisher_id")
        try actor.requirePublisher(publisherID)
        let name = try Validation.text(request.name, field: "name", maximum: 100)
        let settings = request.settings ?? IdentityV1.ApplicationSettings(crossAppLogin: true)
        _ = try AllowedOrigins.check(settings.allowedOrigins, field: "settings.allowed_origins")
        let application = try await store.createApplication(publisherID: publisherID, name: name, settings: settings)
        return IdentityV1.CreateApplicationResponse(application: application.message)
    }

    func updateApplication(
        _ request: IdentityV1.UpdateApplicationRequest, context: RequestContext
    ) async throws -> IdentityV1.UpdateApplicationResponse {
        let actor = try await dependencies.admin(context)
        let id = try Validation.raveID(request.appId, field: "app_id")
        try actor.requirePublisher(try await store.application(id).publisherID)
        let name = try request.name.map { try Validation.text($0.value, field: "name", maximum: 100) }
        if let settings = request.settings {
            guard request.allowedOrigins == nil else {
                throw IdentityError.invalidArgument(
                    "set either settings (every setting, allowed origins included) or allowed_origins (only "
                        + "them), not both")
            }
            _ = try AllowedOrigins.check(settings.allowedOrigins, field: "settings.allowed_origins")
        }
        let origins = try request.allowedOrigins.map {
            try AllowedOrigins.check($0.origins, field: "allowed_origins.origins")
        }
        let application = try await store.updateApplication(
            id: id, name: name, settings: request.settings, origins: origins)
        dependencies.applications.remember(application)
        return IdentityV1.UpdateApplicationResponse(application: application.message)
    }

    func getApplication(
        _ request: IdentityV1.GetApplicationRequest, context: RequestContext
    ) async throws -> IdentityV1.GetApplicationResponse {
        let actor = try await dependencies.admin(context)
        let id = try Validation.raveID(request.appId, field: "app_id")
        let application = try await store.application(id)
        try actor.requirePublisher(application.publisherID)
        return IdentityV1.GetApplicationResponse(application: application.message)
    }

    func getMergeStatus(
        _ request: IdentityV1.GetMergeStatusRequest, context: RequestContext
    ) async throws -> IdentityV1.GetMergeStatusResponse {
        _ = try await dependencies.admin(context)
        let id = try Validation.raveID(request.mergeId, field: "merge_id")
        guard let merge = try await MergeStore(database: dependencies.pool).merge(id) else {
            throw IdentityError.notFound("no merge \(id.hex)")
        }
        return IdentityV1.GetMergeStatusResponse(merge: merge)
    }
}
