import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Identity

@Suite("Provider login, connect and disconnect")
struct ProviderTests {
    typealias Harness = IdentityHarness

    @Test func providerLoginCreatesAnAccountAndFindsItAgain() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let token = try providers.token(.google, subject: "g-1", email: "ada@example.com")
            let first = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .google, token: token)
            #expect(first.created)
            #expect(first.user?.providers == [.google])
            #expect(first.user?.profile?.accountState == .authenticated)
            #expect(first.sessionTokens != nil)
            let again = try await harness.providerLogin(
                appID: app.appId, deviceID: "d2", provider: .google,
                token: try providers.token(.google, subject: "g-1"))
            #expect(!again.created)
            #expect(again.userID == first.userID)
        }
    }

    @Test func guestLoggingInWithANewProviderKeepsTheirRaveID() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "d1")
            let login = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .apple, token: try providers.token(.apple, subject: "a-1"),
                caller: guest)
            #expect(login.userID == guest.userID)
            #expect(!login.created)
            #expect(login.mergeId.isEmpty)
            #expect(login.user?.providers == [.apple])
        }
    }

    @Test func guestLoggingInToAnExistingAccountIsMergedIntoIt() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let account = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .facebook,
                token: try providers.token(.facebook, subject: "f-1"))
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "d2")
            let login = try await harness.providerLogin(
                appID: app.appId, deviceID: "d2", provider: .facebook,
                token: try providers.token(.facebook, subject: "f-1"), caller: guest)
            #expect(login.userID == account.userID)
            #expect(!login.mergeId.isEmpty)
            let resolved = try await harness.internalHandlers.resolveUsers(
                .init(userIds: [guest.userID]), context: Harness.serviceContext)
            #expect(resolved.users.first?.canonicalId == account.userID)
            // The device that played as the guest now plays as the account.
            #expect(try await harness.guestLogin(appID: app.appId, deviceID: "d2").userID == account.userID)
        }
    }

    @Test func connectingAFreeProviderLinksIt() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "d1")
            let response = try await harness.player.connectProvider(
                .init(provider: .google, idToken: try providers.token(.google, subject: "g-2")),
                context: Harness.playerContext(guest, appID: app.appId))
            guard case .connected(let user) = response.outcome else {
                Issue.record("expected connected, got \(String(describing: response.outcome))")
                return
            }
            #expect(user.providers == [.google])
            #expect(user.profile?.userId == guest.userID)
            // A second Google account on the same user is refused until the first is disconnected.
            let second = await statusCode {
                _ = try await harness.player.connectProvider(
                    .init(provider: .google, idToken: try providers.token(.google, subject: "g-3")),
                    context: Harness.playerContext(guest, appID: app.appId))
            }
            #expect(second?.code == .alreadyExists)
        }
    }

    /// Two players: the owner of Google subject "g-owned" and a signed-in second player who tries to connect it.
    func conflict(
        _ harness: Harness, _ providers: ProviderFixture, settings: IdentityV1.ApplicationSettings
    ) async throws -> (app: IdentityV1.Application, owner: IdentityV1.LoginResponse, other: IdentityV1.LoginResponse) {
        let app = try await harness.makeApplication(settings: settings)
        let owner = try await harness.providerLogin(
            appID: app.appId, deviceID: "d1", provider: .google, token: try providers.token(.google, subject: "g-owned")
        )
        _ = try await harness.player.updateCurrentUser(
            .init(displayName: .init(value: "Owner")), context: Harness.playerContext(owner, appID: app.appId))
        let other = try await harness.providerLogin(
            appID: app.appId, deviceID: "d2", provider: .apple, token: try providers.token(.apple, subject: "a-other"))
        return (app, owner, other)
    }

    @Test func conflictIsReportedWithTheOtherAccountsProfile() async throws {
        try await Harness.withProviders { harness, providers in
            let (app, owner, other) = try await conflict(
                harness, providers, settings: .init(mergePolicy: .prompt, crossAppLogin: true))
            let response = try await harness.player.connectProvider(
                .init(provider: .google, idToken: try providers.token(.google, subject: "g-owned")),
                context: Harness.playerContext(other, appID: app.appId))
            guard case .conflict(let conflict) = response.outcome else {
                Issue.record("expected a conflict, got \(String(describing: response.outcome))")
                return
            }
            #expect(conflict.otherUser?.userId == owner.userID)
            #expect(conflict.otherUser?.displayName == "Owner")
            #expect(conflict.mergeAllowed)
            #expect(!conflict.forceDisconnectAllowed)
            let refused = await statusCode {
                _ = try await harness.player.connectProvider(
                    .init(
                        provider: .google, idToken: try providers.token(.google, subject: "g-owned"),
                        resolution: .forceDisconnect),
                    context: Harness.playerContext(other, appID: app.appId))
            }
            #expect(refused?.code == .failedPrecondition)
        }
    }

    @Test func forceDisconnectMovesTheLinkWhenTheAppAllowsIt() async throws {
        try await Harness.withProviders { harness, providers in
            let (app, owner, other) = try await conflict(
                harness, providers, settings: .init(allowForceDisconnect: true, crossAppLogin: true))
            // The owner keeps a way in after the move: Facebook.
            _ = try await harness.player.connectProvider(
                .init(provider: .facebook, idToken: try providers.token(.facebook, subject: "f-owner")),
                context: Harness.playerContext(owner, appID: app.appId))
            let response = try await harness.player.connectProvider(
                .init(
                    provider: .google, idToken: try providers.token(.google, subject: "g-owned"),
                    resolution: .forceDisconnect),
                context: Harness.playerContext(other, appID: app.appId))
            guard case .connected(let user) = response.outcome else {
                Issue.record("expected connected, got \(String(describing: response.outcome))")
                return
            }
            #expect(user.providers == [.apple, .google])
            let previous = try await harness.player.getCurrentUser(
                .init(), context: Harness.playerContext(owner, appID: app.appId))
            #expect(previous.user?.providers == [.facebook])
            let merge = await statusCode {
                _ = try await harness.player.connectProvider(
                    .init(
                        provider: .google, idToken: try providers.token(.google, subject: "g-owned"),
                        resolution: .merge),
                    context: Harness.playerContext(owner, appID: app.appId))
            }
            #expect(merge?.code == .failedPrecondition)
        }
    }

    @Test func forceDisconnectNeverTakesAnotherAccountsLastCredential() async throws {
        try await Harness.withProviders { harness, providers in
            let (app, owner, other) = try await conflict(
                harness, providers, settings: .init(allowForceDisconnect: true, crossAppLogin: true))
            let token = try providers.token(.google, subject: "g-owned")
            let context = Harness.playerContext(other, appID: app.appId)
            // The conflict does not offer what would be refused.
            let response = try await harness.player.connectProvider(
                .init(provider: .google, idToken: token), context: context)
            guard case .conflict(let conflict) = response.outcome else {
                Issue.record("expected a conflict, got \(String(describing: response.outcome))")
                return
            }
            #expect(!conflict.forceDisconnectAllowed)
            #expect(response.session == nil)
            let forced = await statusCode {
                _ = try await harness.player.connectProvider(
                    .init(provider: .google, idToken: token, resolution: .forceDisconnect), context: context)
            }
            #expect(forced?.code == .failedPrecondition)
            #expect(forced?.message.contains("last way to log in") == true)
            let kept = try await harness.player.getCurrentUser(
                .init(), context: Harness.playerContext(owner, appID: app.appId))
            #expect(kept.user?.providers == [.google])
            #expect(kept.user?.profile?.accountState == .authenticated)
        }
    }

    @Test func connectAndDisconnectReturnAnAccessTokenForTheAccountAsItIsNow() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "d1")
            let context = Harness.playerContext(guest, appID: app.appId)
            let connected = try await harness.player.connectProvider(
                .init(provider: .google, idToken: try providers.token(.google, subject: "g-upgrade")), context: context)
            let session = try #require(connected.session)
            #expect(session.sessionId == guest.sessionTokens?.sessionId)
            #expect(session.refreshToken.isEmpty)
            let claims = try Self.claims(of: session.accessToken)
            #expect(claims["sub"] as? String == guest.userID)
            #expect((claims["scp"] as? String)?.split(separator: " ").contains("authenticated") == true)
            #expect((claims["scp"] as? String)?.split(separator: " ").contains("guest") == false)

            _ = try await harness.player.connectProvider(
                .init(provider: .facebook, idToken: try providers.token(.facebook, subject: "f-upgrade")),
                context: context)
            let disconnected = try await harness.player.disconnectProvider(.init(provider: .google), context: context)
            #expect(disconnected.session?.sessionId == session.sessionId)
            #expect(!(disconnected.session?.accessToken.isEmpty ?? true))
        }
    }

    /// The claims of a compact JWT, read without checking its signature (the test only looks at what it says).
    static func claims(of token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".")
        var payload = parts.count == 3 ? String(parts[1]) : ""
        payload = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        let data = try #require(Data(base64Encoded: payload))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func automaticPolicyMergesTheCallerIntoTheOwner() async throws {
        try await Harness.withProviders { harness, providers in
            let (app, owner, other) = try await conflict(
                harness, providers, settings: .init(mergePolicy: .automatic, crossAppLogin: true))
            let response = try await harness.player.connectProvider(
                .init(provider: .google, idToken: try providers.token(.google, subject: "g-owned")),
                context: Harness.playerContext(other, appID: app.appId))
            guard case .merged(let merge) = response.outcome else {
                Issue.record("expected a merge, got \(String(describing: response.outcome))")
                return
            }
            #expect(merge.sourceUserId == other.userID)
            #expect(merge.targetUserId == owner.userID)
            #expect(merge.state == .completed)
            // The caller's session now acts as the owner, and its new access token says so.
            let session = try #require(response.session)
            #expect(try Self.claims(of: session.accessToken)["sub"] as? String == owner.userID)
            let current = try await harness.player.getCurrentUser(
                .init(), context: Harness.playerContext(other, appID: app.appId))
            #expect(current.user?.profile?.userId == owner.userID)
            #expect(current.user?.providers == [.apple, .google])
        }
    }

    @Test func disconnectNeverRemovesTheLastCredential() async throws {
        try await Harness.withProviders { harness, providers in
            let app = try await harness.makeApplication()
            let login = try await harness.providerLogin(
                appID: app.appId, deviceID: "d1", provider: .google, token: try providers.token(.google, subject: "g"))
            let context = Harness.playerContext(login, appID: app.appId)
            let last = await statusCode {
                _ = try await harness.player.disconnectProvider(.init(provider: .google), context: context)
            }
            #expect(last?.code == .failedPrecondition)
            _ = try await harness.player.connectProvider(
                .init(provider: .facebook, idToken: try providers.token(.facebook, subject: "f")), context: context)
            let response = try await harness.player.disconnectProvider(.init(provider: .google), context: context)
            #expect(response.user?.providers == [.facebook])
            let missing = await statusCode {
                _ = try await harness.player.disconnectProvider(.init(provider: .apple), context: context)
            }
            #expect(missing?.code == .notFound)
        }
    }
}
