import RaveMessages
import RaveRPC

/// The operator reads of rave.push.v1.PushAdmin.
extension AdminHandlers {
    /// The tokens the player's own GetTokenInfo lists, each masked (`maskedToken`).
    func listUserDevices(
        _ request: PushV1.ListUserDevicesRequest, context: RequestContext
    ) async throws -> PushV1.ListUserDevicesResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        let appID = try PushDependencies.raveID(request.appId, field: "app_id").hex
        let user = try await dependencies.player(request.userId, field: "user_id")
        var devices = try await dependencies.tokens.tokens(app: appID, user: user, on: dependencies.pool)
        for index in devices.indices { devices[index].token = Self.maskedToken(devices[index].token) }
        return PushV1.ListUserDevicesResponse(devices: devices)
    }

    /// A token as operators see it: enough to tell devices apart, not to push to one.
    ///
    /// "…" and the token's last 6 characters; "…" alone for a token under 12 characters, whose last 6 would be too
    /// much of it.
    static func maskedToken(_ token: String) -> String {
        token.count < 12 ? "…" : "…" + token.suffix(6)
    }
}
