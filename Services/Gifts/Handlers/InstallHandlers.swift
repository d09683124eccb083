import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.gifts.v1.GiftsInstall`: what a fresh install asks before it has an account, so no caller is required
/// (the gateway lets these two methods through without a token).
///
/// Neither method changes anything a stranger could exploit: fetching reveals only the gift type key of an
/// invitation whose provider request id the caller already holds, and resolving counts a click.
final class InstallHandlers: GiftsV1.GiftsInstallHandler {
    let dependencies: GiftsDependencies

    init(dependencies: GiftsDependencies) {
        self.dependencies = dependencies
    }

    func fetchExternalGift(
        _ request: GiftsV1.FetchExternalGiftRequest, context: RequestContext
    ) async throws -> GiftsV1.FetchExternalGiftResponse {
        let appID = try RequestLimits.id(request.appId, field: "app_id")
        let requestID = try RequestLimits.externalID(request.requestId, field: "request_id")
        let provider = request.provider.rawValue
        guard (0...3).contains(provider) else {
            throw GiftsError.invalidArgument("provider must be UNSPECIFIED (any), GOOGLE, APPLE or FACEBOOK")
        }
        let (key, sender) = try await dependencies.shares.fetch(requestID: requestID, provider: provider, appID: appID)
        return GiftsV1.FetchExternalGiftResponse(giftTypeKey: key, requestId: requestID, senderId: sender.hex)
    }

    func resolveInstallLink(
        _ request: GiftsV1.ResolveInstallLinkRequest, context: RequestContext
    ) async throws -> GiftsV1.ResolveInstallLinkResponse {
        try await dependencies.shares.resolveLink(try InstallCode.validate(request.code))
    }
}
