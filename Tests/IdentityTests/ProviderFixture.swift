import Foundation
import RaveMessages
import Testing

@testable import Identity

/// Google, Apple and Facebook as test providers: one P-256 key each, published as JWKS files, signing ID tokens
/// the way the real providers do.
struct ProviderFixture {
    static let audience = "com.example.rave.game"

    private let providers: [OIDCProvider: (issuer: TestOIDCProvider, key: TestProviderKey)]

    init() throws {
        var providers: [OIDCProvider: (issuer: TestOIDCProvider, key: TestProviderKey)] = [:]
        for provider in OIDCProvider.allCases {
            let issuer = try TestOIDCProvider()
            let key = try TestProviderKey.p256("\(provider.rawValue)-key")
            try issuer.publish([key])
            providers[provider] = (issuer, key)
        }
        self.providers = providers
    }

    var configurations: [OIDCProviderConfiguration] {
        providers.map { provider, entry in
            OIDCProviderConfiguration(provider: provider, audiences: [Self.audience], jwksPath: entry.issuer.jwksPath)
        }
    }

    func removeFiles() {
        for entry in providers.values { entry.issuer.removeFiles() }
    }

    /// An ID token for `subject`, valid now unless told otherwise; `key` signs instead of the published key.
    func token(
        _ provider: OIDCProvider, subject: String, email: String? = nil, nonce: String? = nil,
        audience: String = ProviderFixture.audience, expiresIn lifetime: Int = 3600, key: TestProviderKey? = nil,
        name: String? = nil, picture: String? = nil
    ) throws -> String {
        let entry = try #require(providers[provider])
        let now = Int(Date().timeIntervalSince1970)
        var claims = [
            "\"iss\":\"\(provider.defaultIssuers[0])\"", "\"sub\":\"\(subject)\"", "\"aud\":\"\(audience)\"",
            "\"iat\":\(now - 10)", "\"exp\":\(now + lifetime)",
        ]
        if let email { claims += ["\"email\":\"\(email)\"", "\"email_verified\":true"] }
        if let nonce { claims.append("\"nonce\":\"\(nonce)\"") }
        if let name { claims.append("\"name\":\"\(name)\"") }
        if let picture { claims.append("\"picture\":\"\(picture)\"") }
        let signer = key ?? entry.key
        return try entry.issuer.token(
            claims: "{" + claims.joined(separator: ",") + "}", key: signer,
            header: "{\"alg\":\"ES256\",\"kid\":\"\(entry.key.keyID)\",\"typ\":\"JWT\"}")
    }
}

extension IdentityHarness {
    /// Runs `body` with identity configured to accept `providers`' tokens and the given merge participants.
    static func withProviders(
        participants: [IdentityConfiguration.MergeParticipant] = [], clock: TestClock? = nil,
        _ body: (IdentityHarness, ProviderFixture) async throws -> Void
    ) async throws {
        let providers = try ProviderFixture()
        defer { providers.removeFiles() }
        try await with(
            configure: {
                $0.providers = providers.configurations
                $0.mergeParticipants = participants
            }, clock: clock
        ) { harness in
            try await body(harness, providers)
        }
    }

    /// Logs in with a provider token on `deviceID`, as `caller` (a signed-in guest) when given.
    func providerLogin(
        appID: String, deviceID: String, provider: IdentityV1.Provider, token: String,
        caller: IdentityV1.LoginResponse? = nil
    ) async throws -> IdentityV1.LoginResponse {
        let context = caller.map { Self.playerContext($0, appID: appID) } ?? Self.anonymous
        return try await player.loginWithProvider(
            .init(
                appId: appID, device: .init(deviceId: deviceID, name: "phone", platform: "ios"), provider: provider,
                idToken: token),
            context: context)
    }
}
