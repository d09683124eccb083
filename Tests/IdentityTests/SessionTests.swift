import RaveMessages
import RaveRPC
import Testing

@testable import Identity

@Suite struct SessionTests {
    @Test func refreshRotatesAndReuseRevokesTheFamily() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let first = try #require(login.sessionTokens)
            let refreshed = try await harness.player.refreshSession(
                .init(refreshToken: first.refreshToken), context: IdentityHarness.anonymous)
            let second = try #require(refreshed.tokens)
            #expect(second.refreshToken != first.refreshToken)
            #expect(second.sessionId == first.sessionId)

            let reuse = await statusCode {
                _ = try await harness.player.refreshSession(
                    .init(refreshToken: first.refreshToken), context: IdentityHarness.anonymous)
            }
            #expect(reuse?.code == .unauthenticated)
            #expect(reuse?.message.contains("already used") == true)
            // The thief's reuse also ends the legitimate holder's newer token.
            let after = await statusCode {
                _ = try await harness.player.refreshSession(
                    .init(refreshToken: second.refreshToken), context: IdentityHarness.anonymous)
            }
            #expect(after?.code == .unauthenticated)
        }
    }

    @Test func accessTokenVerifiesWithPublishedKeys() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let keys = try await harness.internalHandlers.signingKeys(.init(), context: IdentityHarness.serviceContext)
            let key = try #require(keys.keys.first)
            #expect(key.publicKey.count == 32)
            #expect(key.algorithm == "EdDSA")
            let token = try #require(login.sessionTokens?.accessToken)
            let header = try #require(Base64URL.decode(token.split(separator: ".")[0]))
            #expect(String(decoding: header, as: UTF8.self).contains(key.kid))
        }
    }

    @Test func accessTokenScopesFollowTheAccountState() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "scoped-device")
            #expect(try scopes(of: guest.sessionTokens) == [Caller.playerScope, Caller.guestScope])

            let member = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: .init(deviceId: "member-device"), email: "scopes@example.com",
                    password: "correct horse", birthYear: 1990, country: "de"), context: IdentityHarness.anonymous)
            #expect(try scopes(of: member.sessionTokens) == [Caller.playerScope, Caller.authenticatedScope])
            let refreshed = try await harness.player.refreshSession(
                .init(refreshToken: try #require(member.sessionTokens).refreshToken),
                context: IdentityHarness.anonymous)
            #expect(try scopes(of: refreshed.tokens) == [Caller.playerScope, Caller.authenticatedScope])
        }
    }

    private func scopes(of tokens: IdentityV1.SessionTokens?) throws -> [String] {
        let token = try #require(tokens?.accessToken)
        let payload = try #require(Base64URL.decode(token.split(separator: ".")[1]))
        return try AccessTokenClaims(jsonBytes: payload).scopes
    }

    @Test func listsAndRevokesSessionsAndDevices() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: .init(deviceId: "phone"), email: "s@example.com",
                    password: "password123", birthYear: 1990, country: "DE"), context: IdentityHarness.anonymous)
            let tablet = try await harness.player.loginWithPassword(
                .init(
                    appId: app.appId, device: .init(deviceId: "tablet"), email: "s@example.com", password: "password123"
                ),
                context: IdentityHarness.anonymous)
            let context = IdentityHarness.playerContext(login, appID: app.appId)
            let sessions = try await harness.player.listSessions(.init(), context: context).sessions
            #expect(sessions.count == 2)
            #expect(sessions.filter(\.current).count == 1)
            let devices = try await harness.player.listDevices(.init(), context: context).devices
            #expect(Set(devices.map(\.deviceId)) == ["phone", "tablet"])
            let tabletSession = try #require(tablet.sessionTokens)
            _ = try await harness.player.revokeSession(.init(sessionId: tabletSession.sessionId), context: context)
            let refresh = await statusCode {
                _ = try await harness.player.refreshSession(
                    .init(refreshToken: tabletSession.refreshToken), context: IdentityHarness.anonymous)
            }
            #expect(refresh?.code == .unauthenticated)
            #expect(try await harness.player.listSessions(.init(), context: context).sessions.count == 1)
        }
    }
}
