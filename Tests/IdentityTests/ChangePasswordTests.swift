import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Identity

/// ChangePassword (docs/identity.md, "Changing the password"): the current password (and a code with two-factor) is
/// needed, wrong guesses count toward the login throttle, every other session ends, and a retry of a change that
/// succeeded is answered as that change.
@Suite("Changing the password")
struct ChangePasswordTests {
    typealias Harness = IdentityHarness
    static let old = "correct horse"
    static let new = "battery staple"

    /// A password account signed in on a phone; the phone's login.
    func account(
        _ harness: Harness, app: IdentityV1.Application, email: String = "change@example.com"
    ) async throws -> IdentityV1.LoginResponse {
        try await harness.player.signUp(
            .init(
                appId: app.appId, device: .init(deviceId: "phone"), email: email, password: Self.old,
                birthYear: 1990, country: "DE"),
            context: Harness.anonymous)
    }

    /// The context of `login`'s session calling from `address`.
    static func context(
        _ login: IdentityV1.LoginResponse, appID: String, address: String = "198.51.100.7"
    ) -> RequestContext {
        Harness.context(
            caller: Caller(
                userID: login.userID, appID: appID, sessionID: login.sessionTokens?.sessionId ?? "", scopes: ["player"]),
            metadata: ["rave-client-address": address])
    }

    func login(
        _ harness: Harness, appID: String, device: String, password: String, email: String = "change@example.com"
    ) async -> (login: IdentityV1.LoginResponse?, error: (code: StatusCode, message: String)?) {
        var result: IdentityV1.LoginResponse? = nil
        let error = await statusCode {
            result = try await harness.player.loginWithPassword(
                .init(appId: appID, device: .init(deviceId: device), email: email, password: password),
                context: Harness.context(caller: nil, metadata: ["rave-client-address": "198.51.100.7"]))
        }
        return (result, error)
    }

    func change(
        _ harness: Harness, _ context: RequestContext, current: String = old, new: String = new, code: String = ""
    ) async throws -> IdentityV1.ChangePasswordResponse {
        try await harness.player.changePassword(
            .init(currentPassword: current, twoFactorCode: code, newPassword: new), context: context)
    }

    @Test func aChangeEndsEveryOtherSessionAndKeepsTheCallers() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let phone = try await account(harness, app: app)
            let tablet = try #require(
                await login(harness, appID: app.appId, device: "tablet", password: Self.old).login)
            let laptop = try #require(
                await login(harness, appID: app.appId, device: "laptop", password: Self.old).login)
            let cursor = try await harness.internalHandlers.listRevocations(.init(), context: Harness.serviceContext)
                .cursor

            let changed = try await change(harness, Self.context(phone, appID: app.appId))
            #expect(changed.revokedSessions == 2)
            _ = try await harness.player.getCurrentUser(.init(), context: Self.context(phone, appID: app.appId))
            for other in [tablet, laptop] {
                let ended = await statusCode {
                    _ = try await harness.player.getCurrentUser(.init(), context: Self.context(other, appID: app.appId))
                }
                #expect(ended?.message == "the session has ended; log in again")
            }
            let feed = try await harness.internalHandlers.listRevocations(
                .init(afterCursor: cursor), context: Harness.serviceContext)
            #expect(
                Set(feed.revocations.map(\.sessionId))
                    == Set([tablet, laptop].compactMap { $0.sessionTokens?.sessionId }))
            // The phone's refresh token still works; the new password logs in, the old one no longer does.
            _ = try await harness.player.refreshSession(
                .init(refreshToken: phone.sessionTokens?.refreshToken ?? ""), context: Harness.anonymous)
            #expect(await login(harness, appID: app.appId, device: "tablet", password: Self.new).error == nil)
            let stale = await login(harness, appID: app.appId, device: "tablet", password: Self.old).error
            #expect(stale?.code == .unauthenticated)
        }
    }

    @Test func wrongCurrentPasswordsCountTowardTheLoginThrottle() async throws {
        try await Harness.with(clock: TestClock()) { harness in
            let app = try await harness.makeApplication()
            let phone = try await account(harness, app: app)
            let context = Self.context(phone, appID: app.appId)
            for _ in 0..<5 {
                let wrong = await statusCode { _ = try await change(harness, context, current: "not my password") }
                #expect(wrong?.code == .invalidArgument)
                #expect(wrong?.message == "current_password is wrong")
            }
            // The pair (this address, this account's email) is full: the change and a login from here both wait.
            let throttled = await statusCode { _ = try await change(harness, context) }
            #expect(throttled?.code == .resourceExhausted)
            #expect(throttled?.message == "too many failed logins; try again in 180 s")
            let login = await login(harness, appID: app.appId, device: "tablet", password: Self.old).error
            #expect(login?.message == "too many failed logins; try again in 180 s")
        }
    }

    @Test func retryingAChangeThatSucceededAnswersAsItDidAndLocksNobodyOut() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            let phone = try await account(harness, app: app)
            let context = Self.context(phone, appID: app.appId)
            #expect(try await change(harness, context).revokedSessions == 0)
            // The answer was lost and the game sends the same request again, more times than the throttle allows
            // failures: each is answered as the change was, and nothing is charged.
            for _ in 0..<6 {
                #expect(try await change(harness, context) == IdentityV1.ChangePasswordResponse(revokedSessions: 0))
            }
            #expect(await login(harness, appID: app.appId, device: "tablet", password: Self.new).error == nil)
            // Only the very same change is a retry: the old password with another new one is wrong.
            let other = await statusCode { _ = try await change(harness, context, new: "something else") }
            #expect(other?.message == "current_password is wrong")
            // And only for a while.
            clock.advance(by: PlayerHandlers.passwordChangeRetryWindow + 1)
            let late = await statusCode { _ = try await change(harness, context) }
            #expect(late?.message == "current_password is wrong")
        }
    }

    @Test func twoFactorAccountsNeedACodeAndAWrongOneChangesNothing() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication(settings: .init(twoFactorAllowed: true, crossAppLogin: true))
            let phone = try await account(harness, app: app)
            let context = Self.context(phone, appID: app.appId)
            let enable = try await harness.player.enableTwoFactor(.init(), context: context)
            let totp = try #require(TOTP(base32Secret: enable.secret))
            _ = try await harness.player.confirmTwoFactor(.init(code: try totp.code(at: Date())), context: context)

            let missing = await statusCode { _ = try await change(harness, context) }
            #expect(missing?.code == .invalidArgument)
            #expect(missing?.message == "two_factor_code is required: this account uses two-factor")
            let wrong = await statusCode { _ = try await change(harness, context, code: "000000x") }
            #expect(wrong?.code == .invalidArgument)
            #expect(wrong?.message == PlayerHandlers.wrongCode)
            // Nothing changed: the old password still gets as far as the challenge.
            let stillOld = await login(harness, appID: app.appId, device: "tablet", password: Self.old)
            #expect(stillOld.error == nil)

            let code = try totp.code(at: Date().addingTimeInterval(30))
            #expect(try await change(harness, context, code: code).revokedSessions == 0)
            let stale = await login(harness, appID: app.appId, device: "laptop", password: Self.old).error
            #expect(stale?.code == .unauthenticated)
        }
    }

    @Test func inputIsCheckedAndAnAccountWithoutPasswordIsTold() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let phone = try await account(harness, app: app)
            let context = Self.context(phone, appID: app.appId)
            for (current, new, message) in [
                (Self.old, "short", "new_password must be 8…128 characters, got 5"),
                (Self.old, String(repeating: "p", count: 129), "new_password must be 8…128 characters, got 129"),
                (Self.old, Self.old, "new_password must differ from the current password"),
                ("", Self.new, "current_password must be 1…128 characters (Unicode code points), got 0"),
            ] {
                let refused = await statusCode { _ = try await change(harness, context, current: current, new: new) }
                #expect(refused?.code == .invalidArgument)
                #expect(refused?.message == message)
            }
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "guest")
            let none = await statusCode { _ = try await change(harness, Self.context(guest, appID: app.appId)) }
            #expect(none?.code == .failedPrecondition)
            #expect(none?.message == "this account has no password to change; add one with SignUp while signed in")
        }
    }
}
