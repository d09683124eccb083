import RaveMessages
import RaveRPC
import Testing

@testable import Identity

@Suite struct AccountTests {
    @Test func guestLoginCreatesAnonymousUserOnceperDevice() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let first = try await harness.guestLogin(appID: app.appId, deviceID: "device-1")
            #expect(first.created)
            #expect(first.user?.profile?.accountState == .anonymous)
            #expect(first.userID.count == 32)
            let tokens = try #require(first.sessionTokens)
            #expect(!tokens.accessToken.isEmpty && !tokens.refreshToken.isEmpty)
            let again = try await harness.guestLogin(appID: app.appId, deviceID: "device-1")
            #expect(!again.created)
            #expect(again.userID == first.userID)
            let other = try await harness.guestLogin(appID: app.appId, deviceID: "device-2")
            #expect(other.userID != first.userID)
        }
    }

    @Test func crossAppLoginFollowsExplicitLoginUntilLogout() async throws {
        try await IdentityHarness.with { harness in
            let first = try await harness.makeApplication()
            let second = try await harness.makeApplication(
                settings: .init(crossAppLogin: true), publisherID: first.publisherId)
            let device = IdentityV1.DeviceInfo(deviceId: "shared-device")
            let signedUp = try await harness.player.signUp(
                .init(
                    appId: first.appId, device: device, email: "cross@example.com", password: "correct horse",
                    birthYear: 1990, country: "de"), context: IdentityHarness.anonymous)
            let inSecond = try await harness.guestLogin(appID: second.appId, deviceID: "shared-device")
            #expect(inSecond.userID == signedUp.userID)

            _ = try await harness.player.logout(
                .init(), context: IdentityHarness.playerContext(signedUp, appID: first.appId))
            let third = try await harness.makeApplication(
                settings: .init(crossAppLogin: true), publisherID: first.publisherId)
            let afterLogout = try await harness.guestLogin(appID: third.appId, deviceID: "shared-device")
            #expect(afterLogout.userID != signedUp.userID)
            #expect(afterLogout.created)
        }
    }

    @Test func signUpReturnsSignUpDataAndPasswordLoginWorks() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let device = IdentityV1.DeviceInfo(deviceId: "d")
            let child = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: device, email: "kid@example.com", password: "password123",
                    birthYear: 2020, country: "US"), context: IdentityHarness.anonymous)
            #expect(child.signUpData?.passedCoppaCheck == false)
            #expect(child.user?.profile?.accountState == .authenticated)
            let canadian = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: device, email: "ca@example.com", password: "password123",
                    birthYear: 1980, country: "CA", newsletterOptIn: true), context: IdentityHarness.anonymous)
            #expect(canadian.signUpData?.acceptedNewsletter == true)
            #expect(canadian.signUpData?.passedCoppaCheck == true)

            let login = try await harness.player.loginWithPassword(
                .init(appId: app.appId, device: device, email: "CA@example.com", password: "password123"),
                context: IdentityHarness.anonymous)
            #expect(login.userID == canadian.userID)
        }
    }

    @Test func guestSigningUpKeepsItsRaveID() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "g")
            let signedUp = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: .init(deviceId: "g"), email: "g@example.com", password: "password123",
                    birthYear: 1999, country: "GB"), context: IdentityHarness.playerContext(guest, appID: app.appId))
            #expect(signedUp.userID == guest.userID)
            #expect(!signedUp.created)
        }
    }

    @Test func wrongPasswordAndUnknownEmailFailAlikeAndLockOut() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let device = IdentityV1.DeviceInfo(deviceId: "d")
            _ = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: device, email: "me@example.com", password: "password123",
                    birthYear: 1990, country: "FR"), context: IdentityHarness.anonymous)
            let context = IdentityHarness.context(caller: nil, metadata: ["rave-client-address": "192.0.2.7"])
            let wrong = await statusCode {
                _ = try await harness.player.loginWithPassword(
                    .init(appId: app.appId, device: device, email: "me@example.com", password: "wrong-password"),
                    context: context)
            }
            let unknown = await statusCode {
                _ = try await harness.player.loginWithPassword(
                    .init(appId: app.appId, device: device, email: "nobody@example.com", password: "password123"),
                    context: IdentityHarness.anonymous)
            }
            #expect(wrong?.code == .unauthenticated)
            #expect(wrong?.code == unknown?.code && wrong?.message == unknown?.message)
            for _ in 0..<4 {
                _ = await statusCode {
                    _ = try await harness.player.loginWithPassword(
                        .init(appId: app.appId, device: device, email: "me@example.com", password: "nope-nope"),
                        context: context)
                }
            }
            let locked = await statusCode {
                _ = try await harness.player.loginWithPassword(
                    .init(appId: app.appId, device: device, email: "me@example.com", password: "password123"),
                    context: context)
            }
            #expect(locked?.code == .resourceExhausted)
        }
    }

    @Test func duplicateSignUpEmailIsAlreadyExists() async throws {
        try await IdentityHarness.with { harness in
            let app = try await harness.makeApplication()
            let request = IdentityV1.SignUpRequest(
                appId: app.appId, device: .init(deviceId: "d"), email: "dup@example.com", password: "password123",
                birthYear: 1990, country: "DE")
            _ = try await harness.player.signUp(request, context: IdentityHarness.anonymous)
            let again = await statusCode {
                _ = try await harness.player.signUp(request, context: IdentityHarness.anonymous)
            }
            #expect(again?.code == .alreadyExists)
        }
    }
}
