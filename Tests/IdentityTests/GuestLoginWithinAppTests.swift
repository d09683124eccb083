import Foundation
import RaveMessages
import Testing

@testable import Identity

/// Apps without cross-app login use a leaner guest login statement; it must behave like the full one otherwise.
@Suite("Guest login in an app without cross-app login")
struct GuestLoginWithinAppTests {
    @Test func deviceKeepsItsOwnUserAndIgnoresTheCrossAppPlayer() async throws {
        try await IdentityHarness.with { harness in
            let first = try await harness.makeApplication()
            let isolated = try await harness.makeApplication(
                settings: .init(crossAppLogin: false), publisherID: first.publisherId)
            let signedUp = try await harness.player.signUp(
                .init(
                    appId: first.appId, device: .init(deviceId: "shared-device"), email: "isolated@example.com",
                    password: "correct horse", birthYear: 1990, country: "de"), context: IdentityHarness.anonymous)

            let created = try await harness.guestLogin(appID: isolated.appId, deviceID: "shared-device")
            #expect(created.created)
            #expect(created.userID != signedUp.userID)
            let again = try await harness.guestLogin(appID: isolated.appId, deviceID: "shared-device")
            #expect(!again.created)
            #expect(again.userID == created.userID)
            #expect(again.sessionTokens?.sessionId != created.sessionTokens?.sessionId)
        }
    }
}
