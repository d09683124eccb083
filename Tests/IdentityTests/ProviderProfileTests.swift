import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Identity

@Suite("Provider profile claims and unbacked tokens")
struct ProviderProfileTests {
    typealias Harness = IdentityHarness

    @Test func firstProviderLoginTakesNameAndPictureFromTheToken() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let token = try providers.token(
                .google, subject: "bob", name: "Bob Player", picture: "https://example.com/bob.png")
            let login = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .google, token: token)
            #expect(login.created)
            #expect(login.user?.profile?.displayName == "Bob Player")
            #expect(login.user?.profile?.pictureUrl == "https://example.com/bob.png")
        }
    }

    @Test func providerLoginKeepsTheNameThePlayerChoseAndSkipsABadPicture() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "d1")
            _ = try await harness.player.updateCurrentUser(
                .init(displayName: .init(value: "Chosen")), context: Harness.playerContext(guest, appID: app.appId))
            let token = try providers.token(
                .facebook, subject: "fb-1", name: "Token Name", picture: "javascript:alert(1)")
            let login = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .facebook, token: token, caller: guest)
            #expect(login.userID == guest.userID)
            #expect(login.user?.profile?.displayName == "Chosen")
            #expect(login.user?.profile?.pictureUrl == "")
        }
    }

    @Test func laterLoginsDoNotOverwriteTheProfile() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let first = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .apple,
                token: try providers.token(.apple, subject: "a-1", name: "First"))
            let context = Harness.playerContext(first, appID: app.appId)
            _ = try await harness.player.updateCurrentUser(.init(displayName: .init(value: "")), context: context)
            let again = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .apple,
                token: try providers.token(.apple, subject: "a-1", name: "Second"))
            #expect(again.userID == first.userID)
            #expect(again.user?.profile?.displayName == "")
        }
    }

    /// The seed betting SDK's unbacked token: the caller's user and session, with the scope the wallet reads as
    /// "unbacked bets only", and nothing else (no account-state scope, no refresh token).
    @Test func unbackedTokenCarriesTheUnbackedOnlyScope() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "d1")
            let response = try await harness.player.issueUnbackedToken(
                .init(), context: Harness.playerContext(guest, appID: app.appId))
            #expect(response.userId == guest.userID)
            let claims = try accessTokenClaims(response.accessToken)
            #expect(claims["sub"] as? String == guest.userID)
            #expect(claims["app"] as? String == app.appId)
            #expect(claims["sid"] as? String == guest.sessionTokens?.sessionId)
            #expect(claims["scp"] as? String == "player wallet:unbacked")
            #expect(response.accessTokenExpiresAtUnixMs > Int64(Date().timeIntervalSince1970 * 1000))
            let anonymous = await statusCode {
                _ = try await harness.player.issueUnbackedToken(.init(), context: Harness.anonymous)
            }
            #expect(anonymous?.code == .unauthenticated)
        }
    }
}

/// The claims of a compact JWT (its signature is the token tests' concern).
func accessTokenClaims(_ token: String) throws -> [String: Any] {
    let parts = token.split(separator: ".")
    try #require(parts.count == 3)
    let payload = try #require(Base64URL.decode(String(parts[1])))
    return try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
}
