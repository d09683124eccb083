import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Identity

@Suite("Provider login rejects bad ID tokens")
struct ProviderTokenRejectionTests {
    typealias Harness = IdentityHarness

    /// The status of a provider login with `token`.
    func loginStatus(
        _ harness: Harness, appID: String, _ token: String, provider: IdentityV1.Provider = .google, nonce: String = ""
    ) async -> (code: StatusCode, message: String)? {
        await statusCode {
            _ = try await harness.player.loginWithProvider(
                .init(
                    appId: appID, device: .init(deviceId: "d1"), provider: provider, idToken: token, nonce: nonce),
                context: Harness.anonymous)
        }
    }

    @Test func forgedExpiredAndMisaddressedTokensAreUnauthenticated() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let expired = try providers.token(.google, subject: "g", expiresIn: -3600)
            #expect(await loginStatus(harness, appID: app.appId, expired)?.code == .unauthenticated)

            let wrongKey = try providers.token(.google, subject: "g", key: try TestProviderKey.p256("google-key"))
            let forged = await loginStatus(harness, appID: app.appId, wrongKey)
            #expect(forged?.code == .unauthenticated)
            #expect(forged?.message.contains("signature") == true)

            let otherAudience = try providers.token(.google, subject: "g", audience: "someone.else")
            let audience = await loginStatus(harness, appID: app.appId, otherAudience)
            #expect(audience?.code == .unauthenticated)
            #expect(audience?.message.contains("audience") == true)

            let good = try providers.token(.google, subject: "g").split(separator: ".").map(String.init)
            let none = Base64URL.encode(Array("{\"alg\":\"none\",\"kid\":\"google-key\"}".utf8))
            #expect(await loginStatus(harness, appID: app.appId, "\(none).\(good[1]).")?.code == .unauthenticated)

            let otherClaims = try providers.token(.google, subject: "victim").split(separator: ".").map(String.init)
            let swapped = "\(good[0]).\(otherClaims[1]).\(good[2])"
            #expect(await loginStatus(harness, appID: app.appId, swapped)?.code == .unauthenticated)

            // A token of one provider presented as another's is checked against the other's keys and issuer.
            let apple = try providers.token(.apple, subject: "a")
            #expect(await loginStatus(harness, appID: app.appId, apple)?.code == .unauthenticated)

            let nonce = try providers.token(.google, subject: "g", nonce: "n-1")
            #expect(await loginStatus(harness, appID: app.appId, nonce, nonce: "n-2")?.code == .unauthenticated)
            #expect(await loginStatus(harness, appID: app.appId, nonce, nonce: "n-1") == nil)
        }
    }

    @Test func malformedRequestsSayWhatIsWrong() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let token = try providers.token(.google, subject: "g")
            let noProvider = await loginStatus(harness, appID: app.appId, token, provider: .unspecified)
            #expect(noProvider?.code == .invalidArgument)
            #expect(await loginStatus(harness, appID: app.appId, "")?.code == .invalidArgument)
            #expect(await loginStatus(harness, appID: app.appId, "not-a-jwt")?.code == .unauthenticated)
            #expect(await loginStatus(harness, appID: RaveIDText.unknown, token)?.code == .notFound)
        }
    }

    @Test func unconfiguredProviderIsAFailedPrecondition() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let status = await statusCode {
                _ = try await harness.player.loginWithProvider(
                    .init(appId: app.appId, device: .init(deviceId: "d1"), provider: .google, idToken: "a.b.c"),
                    context: Harness.anonymous)
            }
            #expect(status?.code == .failedPrecondition)
            #expect(status?.message.contains("not enabled") == true)
        }
    }
}

/// Well-formed Rave IDs that name nothing.
enum RaveIDText {
    static let unknown = "0123456789abcdef0123456789abcdef"
}
