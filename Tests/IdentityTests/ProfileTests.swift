import RaveMessages
import RaveRPC
import Testing

@testable import Identity

@Suite struct ProfileTests {
    @Test func usernameIsUniqueWithoutCaseAndStateBecomesPersonalized() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let alice = try await harness.guestLogin(appID: app.appId, deviceID: "a")
            let bob = try await harness.guestLogin(appID: app.appId, deviceID: "b")
            let aliceContext = IdentityHarness.playerContext(alice, appID: app.appId)
            let updated = try await harness.player.updateCurrentUser(
                .init(username: .init(value: "Alice")), context: aliceContext)
            #expect(updated.user?.profile?.username == "Alice")
            #expect(updated.user?.profile?.accountState == .anonymous)
            let taken = await statusCode {
                _ = try await harness.player.updateCurrentUser(
                    .init(username: .init(value: "alice")),
                    context: IdentityHarness.playerContext(bob, appID: app.appId))
            }
            #expect(taken?.code == .alreadyExists)
            let named = try await harness.player.updateCurrentUser(
                .init(displayName: .init(value: "Al")), context: aliceContext)
            #expect(named.user?.profile?.accountState == .personalized)
            let found = try await harness.player.findUser(
                .init(key: .username("ALICE")), context: IdentityHarness.playerContext(bob, appID: app.appId))
            #expect(found.user?.userId == alice.userID)
            #expect(found.user?.displayName == "Al")
        }
    }

    @Test func appScopedDisplayNameFallsBackToGlobalWhenRemoved() async throws {
        try await IdentityHarness.with { harness in
            let globalApp = try await harness.makeApplication()
            let scopedApp = try await harness.makeApplication(
                settings: .init(displayNameScope: .application), publisherID: globalApp.publisherId)
            let login = try await harness.guestLogin(appID: globalApp.appId, deviceID: "d")
            let globalContext = IdentityHarness.playerContext(login, appID: globalApp.appId)
            let scopedContext = IdentityHarness.playerContext(login, appID: scopedApp.appId)
            _ = try await harness.player.updateCurrentUser(
                .init(displayName: .init(value: "Global")), context: globalContext)
            _ = try await harness.player.updateCurrentUser(
                .init(displayName: .init(value: "Scoped")), context: scopedContext)
            #expect(
                try await harness.player.getCurrentUser(.init(), context: scopedContext).user?.profile?.displayName
                    == "Scoped")
            #expect(
                try await harness.player.getCurrentUser(.init(), context: globalContext).user?.profile?.displayName
                    == "Global")
            _ = try await harness.player.updateCurrentUser(.init(displayName: .init(value: "")), context: scopedContext)
            #expect(
                try await harness.player.getCurrentUser(.init(), context: scopedContext).user?.profile?.displayName
                    == "Global")
        }
    }

    @Test func badProfileInputIsRejectedWithClearMessages() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let context = IdentityHarness.playerContext(login, appID: app.appId)
            let badEmail = await statusCode {
                _ = try await harness.player.updateCurrentUser(
                    .init(email: .init(value: "not-an-email")), context: context)
            }
            #expect(badEmail?.code == .invalidArgument)
            #expect(badEmail?.message.contains("email") == true)
            let longName = await statusCode {
                _ = try await harness.player.updateCurrentUser(
                    .init(displayName: .init(value: String(repeating: "x", count: 65))), context: context)
            }
            #expect(longName?.code == .invalidArgument)
            #expect(longName?.message.contains("1…64") == true)
            let badID = await statusCode {
                _ = try await harness.player.findUser(.init(key: .userId("XYZ")), context: context)
            }
            #expect(badID?.code == .invalidArgument)
            let unknownApp = await statusCode {
                _ = try await harness.guestLogin(appID: String(repeating: "0", count: 32), deviceID: "d")
            }
            #expect(unknownApp?.code == .notFound)
            let upperCaseID = await statusCode {
                _ = try await harness.guestLogin(appID: app.appId.uppercased(), deviceID: "d")
            }
            #expect(upperCaseID?.code == .invalidArgument)
            let longDevice = await statusCode {
                _ = try await harness.guestLogin(appID: app.appId, deviceID: String(repeating: "d", count: 129))
            }
            #expect(longDevice?.code == .invalidArgument)
        }
    }

    @Test func appDataKeyIsTheRaveIDAtFirstUse() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "d")
            let context = IdentityHarness.playerContext(login, appID: app.appId)
            let keys = try await harness.player.getAppDataKeys(.init(), context: context)
            #expect(keys.selectedKey == login.userID)
            #expect(keys.candidates.isEmpty)
            let selected = try await harness.player.selectAppDataKey(.init(key: login.userID), context: context)
            #expect(selected.selectedKey == login.userID)
        }
    }
}
