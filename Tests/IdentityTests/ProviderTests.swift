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
            #expect(previous.user?.providers == [])
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
