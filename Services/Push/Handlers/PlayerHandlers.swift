import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// rave.push.v1.Push: the player's device tokens, consent and in-app inbox.
struct PlayerHandlers: PushV1.PushHandler {
    let dependencies: PushDependencies

    func registerToken(
        _ request: PushV1.RegisterTokenRequest, context: RequestContext
    ) async throws -> PushV1.RegisterTokenResponse {
        let (caller, user) = try await player(context)
        let registration = TokenRegistration(
            appID: caller.appID, userID: user, platform: try TokenValidation.platform(request.platform),
            token: try TokenValidation.token(request.token), sandbox: request.sandbox,
            consent: request.consent ?? PushV1.Consent(),
            // The SDK's defaults when the app sends no options: no foreground display, badge and sound on.
            options: request.options ?? PushV1.NotificationOptions(foreground: false, badge: true, sound: true),
            country: try TokenValidation.country(request.country),
            language: try TokenValidation.language(request.language),
            timeZone: try TokenValidation.timeZone(request.timeZone).identifier)
        let info = try await dependencies.tokens.register(
            registration, at: dependencies.clock.now(), on: dependencies.pool)
        return PushV1.RegisterTokenResponse(info: info)
    }

    func getTokenInfo(
        _ request: PushV1.GetTokenInfoRequest, context: RequestContext
    ) async throws -> PushV1.GetTokenInfoResponse {
        let (caller, user) = try await player(context)
        let tokens = try await dependencies.tokens.tokens(app: caller.appID, user: user, on: dependencies.pool)
        guard !tokens.isEmpty else { throw PushError.notFound("no push token is registered for this user") }
        return PushV1.GetTokenInfoResponse(tokens: tokens)
    }

    func updateConsent(
        _ request: PushV1.UpdateConsentRequest, context: RequestContext
    ) async throws -> PushV1.UpdateConsentResponse {
        let (caller, user) = try await player(context)
        guard let consent = request.consent else { throw PushError.invalidArgument("consent is required") }
        let updated = try await dependencies.tokens.updateConsent(
            app: caller.appID, user: user, token: request.token, consent: consent, on: dependencies.pool)
        guard updated > 0 else { throw PushError.notFound("no matching push token is registered for this user") }
        return PushV1.UpdateConsentResponse(updated: Int32(updated))
    }

    func unregisterToken(
        _ request: PushV1.UnregisterTokenRequest, context: RequestContext
    ) async throws -> PushV1.UnregisterTokenResponse {
        let (caller, user) = try await player(context)
        let removed = try await dependencies.tokens.unregister(
            app: caller.appID, user: user, token: request.token, on: dependencies.pool)
        return PushV1.UnregisterTokenResponse(removed: Int32(removed))
    }

    func listInbox(
        _ request: PushV1.ListInboxRequest, context: RequestContext
    ) async throws -> PushV1.ListInboxResponse {
        let (caller, user) = try await player(context)
        let size = try RequestLimits.inboxPageSizes.check(request.pageSize, orThrow: PushError.invalidArgument)
        let offset = try RequestLimits.inboxOffsets.check(request.offset, orThrow: PushError.invalidArgument)
        return try await dependencies.inbox.page(
            user: user, app: caller.appID, size: size, offset: offset, on: dependencies.pool)
    }

    func markRead(_ request: PushV1.MarkReadRequest, context: RequestContext) async throws -> PushV1.MarkReadResponse {
        let (caller, user) = try await player(context)
        var ids: [RaveID] = []
        for text in request.notificationIds {
            ids.append(try PushDependencies.raveID(text, field: "notification_ids"))
        }
        let marked = try await dependencies.inbox.markRead(
            user: user, app: caller.appID, ids: ids, on: dependencies.pool)
        return PushV1.MarkReadResponse(marked: Int32(marked))
    }

    /// The caller and its player: the account its token's user is now (a merged-away id resolves to its target).
    private func player(_ context: RequestContext) async throws -> (Caller, RaveID) {
        let caller = try context.requireUser()
        guard !caller.appID.isEmpty else { throw PushError.invalidArgument("the caller has no application id") }
        return (caller, try await dependencies.player(caller.userID, field: "caller user id"))
    }
}
