import Foundation
import RaveMessages
import RaveRPC
import RaveServices
import RaveTransport

/// A signed-in player as a game client holds it: the gateway connection plus the access token every call carries.
struct PlayerSession: RPCCaller {
    let gateway: RPCClient
    let login: IdentityV1.LoginResponse
    let deviceID: String

    var userID: String { login.user?.profile?.userId ?? "" }
    var accessToken: String {
        if case .tokens(let tokens)? = login.outcome { return tokens.accessToken }
        return ""
    }

    func call(method: String, request: [UInt8], options: CallOptions) async throws(RPCError) -> [UInt8] {
        var options = options
        options.metadata["authorization"] = "Bearer \(accessToken)"
        return try await gateway.call(method: method, request: request, options: options)
    }

    var identity: IdentityV1.IdentityClient { IdentityV1.IdentityClient(caller: self) }
    var social: SocialV1.SocialClient { SocialV1.SocialClient(caller: self) }
    var leaderboards: LeaderboardsV1.LeaderboardsClient { LeaderboardsV1.LeaderboardsClient(caller: self) }
    var push: PushV1.PushClient { PushV1.PushClient(caller: self) }
    var wallet: WalletV1.WalletClient { WalletV1.WalletClient(caller: self) }
    var batch: GatewayV1.GatewayClient { GatewayV1.GatewayClient(caller: self) }
    var gifts: GiftsV1.GiftsClient { GiftsV1.GiftsClient(caller: self) }
}

extension SystemStack {
    /// Identity's public methods through the gateway, without a token (logins).
    var anonymousIdentity: IdentityV1.IdentityClient { IdentityV1.IdentityClient(caller: gateway) }

    /// A new publisher and application, made by the operator through the gateway; each story plays in its own app.
    func makeApplication(settings: IdentityV1.ApplicationSettings? = nil) async throws -> String {
        let identityAdmin = IdentityV1.IdentityAdminClient(caller: admin)
        let publisher = try await identityAdmin.createPublisher(.init(name: "Studio \(UUID().uuidString.prefix(8))"))
        let application = try await identityAdmin.createApplication(
            .init(publisherId: publisher.publisher?.publisherId ?? "", name: "Game", settings: settings))
        return application.application?.appId ?? ""
    }

    /// A connection straight to a service's protocol port (not through the gateway) presenting the development
    /// certificate `certificate` ("client", "admin", "wallet", …), as an attacker holding it would.
    func directConnection(port: Int, certificate: String) async throws -> RPCConnection {
        try await RPCConnection.connect(
            host: "127.0.0.1", port: port,
            tls: try TLSContext(
                .client(
                    trustRootsPath: "\(certificates)/ca.pem",
                    certificateChainPath: "\(certificates)/\(certificate).pem",
                    privateKeyPath: "\(certificates)/\(certificate)-key.pem")),
            group: Self.group)
    }

    /// A guest on `deviceID` (a new device unless given).
    func guest(appID: String, deviceID: String = "device-\(UUID().uuidString)") async throws -> PlayerSession {
        let login = try await anonymousIdentity.guestLogin(.init(appId: appID, device: device(deviceID)))
        return PlayerSession(gateway: gateway, login: login, deviceID: deviceID)
    }

    /// A BigFish-ID-style account (email and password): an authenticated player.
    func signUp(appID: String, name: String) async throws -> PlayerSession {
        let deviceID = "device-\(UUID().uuidString)"
        let email = "\(name.lowercased())-\(UUID().uuidString.prefix(8))@example.com"
        let login = try await anonymousIdentity.signUp(
            .init(
                appId: appID, device: device(deviceID), email: email, password: "correct horse battery",
                birthYear: 1990, country: "FR"))
        let session = PlayerSession(gateway: gateway, login: login, deviceID: deviceID)
        _ = try await session.identity.updateCurrentUser(
            .init(
                username: .init(value: name.lowercased() + String(UUID().uuidString.prefix(6)).lowercased()),
                displayName: .init(value: name)))
        return session
    }

    /// Logs in with a provider's ID token on `session`'s device, as that signed-in player (a guest logging in).
    func providerLogin(
        _ session: PlayerSession, appID: String, provider: IdentityV1.Provider, token: String
    ) async throws -> PlayerSession {
        let login = try await session.identity.loginWithProvider(
            .init(appId: appID, device: device(session.deviceID), provider: provider, idToken: token))
        return PlayerSession(gateway: gateway, login: login, deviceID: session.deviceID)
    }

    /// `session` after RefreshSession: a new access token whose scopes follow the account's state now.
    func refreshed(_ session: PlayerSession) async throws -> PlayerSession {
        guard case .tokens(let tokens)? = session.login.outcome else { throw StackError("the session has no tokens") }
        let refreshed = try await anonymousIdentity.refreshSession(.init(refreshToken: tokens.refreshToken))
        var login = session.login
        login.outcome = refreshed.tokens.map { .tokens($0) }
        return PlayerSession(gateway: gateway, login: login, deviceID: session.deviceID)
    }

    private func device(_ deviceID: String) -> IdentityV1.DeviceInfo {
        IdentityV1.DeviceInfo(deviceId: deviceID, name: "test device", platform: "ios")
    }
}

/// Polls `condition` until it holds or `timeout` passes: asynchronous effects (merges, events, pushes) are waited
/// for this way, never with a fixed sleep.
func eventually(
    _ description: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while true {
        if try await condition() { return }
        guard clock.now < deadline else { throw StackError("timed out after \(timeout) waiting until \(description)") }
        try await Task.sleep(for: .milliseconds(100))
    }
}
