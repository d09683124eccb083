import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Identity

@Suite("Two-factor authentication")
struct TwoFactorTests {
    typealias Harness = IdentityHarness

    /// A password account in an app that allows two-factor, enrolled and confirmed; returns its context, the
    /// TOTP generator and the backup codes.
    func enrolledAccount(
        _ harness: Harness, email: String = "tf@example.com"
    ) async throws -> (app: IdentityV1.Application, context: RequestContext, totp: TOTP, backupCodes: [String]) {
        let app = try await harness.makeApplication(settings: .init(twoFactorAllowed: true, crossAppLogin: true))
        let signUp = try await harness.player.signUp(
            .init(
                appId: app.appId, device: .init(deviceId: "d1"), email: email, password: "correct horse",
                birthYear: 1990, country: "DE"),
            context: Harness.anonymous)
        let context = Harness.playerContext(signUp, appID: app.appId)
        let enable = try await harness.player.enableTwoFactor(.init(), context: context)
        #expect(enable.otpauthUrl.hasPrefix("otpauth://totp/Rave:"))
        #expect(enable.otpauthUrl.contains("secret=\(enable.secret)"))
        let totp = try #require(TOTP(base32Secret: enable.secret))
        // The current code: it is still in the service's window if a step boundary passes before the service
        // checks it (a code one step back was not, and failed about once in a thousand runs).
        let confirm = try await harness.player.confirmTwoFactor(
            .init(code: try totp.code(at: Date())), context: context)
        #expect(confirm.backupCodes.count == 10)
        return (app, context, totp, confirm.backupCodes)
    }

    /// A code the service accepts after enrolment.
    ///
    /// It is the next step's: enrolment used the current step (or an earlier one), and the next step stays in the
    /// service's ±1 window even if a step boundary passes before the service checks it.
    func unusedCode(_ totp: TOTP) throws -> String {
        try totp.code(at: Date().addingTimeInterval(30))
    }

    func passwordLogin(
        _ harness: Harness, appID: String, email: String = "tf@example.com", address: String = "10.0.0.1"
    ) async throws -> IdentityV1.LoginResponse {
        try await harness.player.loginWithPassword(
            .init(appId: appID, device: .init(deviceId: "d2"), email: email, password: "correct horse"),
            context: Harness.context(caller: nil, metadata: ["rave-client-address": address]))
    }

    func challengeID(_ login: IdentityV1.LoginResponse) throws -> String {
        guard case .twoFactorChallenge(let challenge) = login.outcome else {
            Issue.record("expected a two-factor challenge, got \(String(describing: login.outcome))")
            throw RPCError.internalError("no challenge")
        }
        return challenge.challengeId
    }

    @Test func loginOfATwoFactorUserIsCompletedWithATOTPCodeOnce() async throws {
        try await Harness.with { harness in
            let (app, _, totp, _) = try await enrolledAccount(harness)
            let login = try await passwordLogin(harness, appID: app.appId)
            #expect(login.user?.twoFactorEnabled == true)
            let challenge = try challengeID(login)
            let code = try unusedCode(totp)
            let done = try await harness.player.completeTwoFactorLogin(
                .init(challengeId: challenge, code: code), context: Harness.anonymous)
            #expect(done.sessionTokens != nil)
            #expect(done.userID == login.userID)
            // The same code cannot complete a second login, and a completed challenge cannot be used again.
            let second = try challengeID(try await passwordLogin(harness, appID: app.appId))
            let replay = await statusCode {
                _ = try await harness.player.completeTwoFactorLogin(
                    .init(challengeId: second, code: code), context: Harness.anonymous)
            }
            #expect(replay?.code == .unauthenticated)
            #expect(replay?.message == PlayerHandlers.wrongCode)
            let reused = await statusCode {
                _ = try await harness.player.completeTwoFactorLogin(
                    .init(challengeId: challenge, code: code), context: Harness.anonymous)
            }
            #expect(reused?.code == .unauthenticated)
        }
    }

    @Test func backupCodesWorkOnceEach() async throws {
        try await Harness.with { harness in
            let (app, _, _, backupCodes) = try await enrolledAccount(harness)
            let first = try challengeID(try await passwordLogin(harness, appID: app.appId))
            let done = try await harness.player.completeTwoFactorLogin(
                .init(challengeId: first, code: backupCodes[0].uppercased()), context: Harness.anonymous)
            #expect(done.sessionTokens != nil)
            let second = try challengeID(try await passwordLogin(harness, appID: app.appId))
            let spent = await statusCode {
                _ = try await harness.player.completeTwoFactorLogin(
                    .init(challengeId: second, code: backupCodes[0]), context: Harness.anonymous)
            }
            #expect(spent?.code == .unauthenticated)
            _ = try await harness.player.completeTwoFactorLogin(
                .init(challengeId: second, code: backupCodes[1]), context: Harness.anonymous)
        }
    }

    @Test func wrongCodesAreThrottledUntilTheyDrain() async throws {
        let clock = TestClock()
        try await Harness.with(clock: clock) { harness in
            let (app, _, totp, _) = try await enrolledAccount(harness)
            let challenge = try challengeID(try await passwordLogin(harness, appID: app.appId))
            let context = Harness.context(caller: nil, metadata: ["rave-client-address": "10.9.9.9"])
            for _ in 0..<5 {
                let wrong = await statusCode {
                    _ = try await harness.player.completeTwoFactorLogin(
                        .init(challengeId: challenge, code: "000000"), context: context)
                }
                #expect(wrong?.code == .unauthenticated)
            }
            // Refused now, even for the right code, for one drain step of the pair (5 per 15 minutes).
            let throttled = await statusCode {
                _ = try await harness.player.completeTwoFactorLogin(
                    .init(challengeId: challenge, code: try unusedCode(totp)), context: context)
            }
            #expect(throttled?.code == .resourceExhausted)
            #expect(throttled?.message == "too many wrong codes; try again in 180 s")
            clock.advance(by: 180)
            let login = try await harness.player.completeTwoFactorLogin(
                .init(challengeId: challenge, code: try unusedCode(totp)), context: context)
            #expect(login.sessionTokens != nil)
        }
    }

    @Test func disablingNeedsAValidCode() async throws {
        try await Harness.with { harness in
            let (app, context, totp, _) = try await enrolledAccount(harness)
            let wrong = await statusCode {
                _ = try await harness.player.disableTwoFactor(.init(code: "123456"), context: context)
            }
            #expect(wrong?.code == .invalidArgument)
            _ = try await harness.player.disableTwoFactor(.init(code: try unusedCode(totp)), context: context)
            let login = try await passwordLogin(harness, appID: app.appId)
            #expect(login.sessionTokens != nil)
            #expect(login.user?.twoFactorEnabled == false)
            let again = await statusCode {
                _ = try await harness.player.disableTwoFactor(.init(code: "123456"), context: context)
            }
            #expect(again?.code == .failedPrecondition)
        }
    }

    @Test func enrolmentFollowsTheAppAndTheAccount() async throws {
        try await Harness.with { harness in
            let plain = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: plain.appId, deviceID: "d1")
            let notOffered = await statusCode {
                _ = try await harness.player.enableTwoFactor(
                    .init(), context: Harness.playerContext(guest, appID: plain.appId))
            }
            #expect(notOffered?.code == .failedPrecondition)
            let app = try await harness.makeApplication(settings: .init(twoFactorAllowed: true, crossAppLogin: true))
            let appGuest = try await harness.guestLogin(appID: app.appId, deviceID: "d1")
            let anonymous = await statusCode {
                _ = try await harness.player.enableTwoFactor(
                    .init(), context: Harness.playerContext(appGuest, appID: app.appId))
            }
            #expect(anonymous?.code == .failedPrecondition)
            let (_, context, totp, _) = try await enrolledAccount(harness, email: "second@example.com")
            let twice = await statusCode { _ = try await harness.player.enableTwoFactor(.init(), context: context) }
            #expect(twice?.code == .failedPrecondition)
            let noEnrolment = await statusCode {
                _ = try await harness.player.confirmTwoFactor(
                    .init(code: try totp.code(at: Date())), context: context)
            }
            #expect(noEnrolment?.code == .failedPrecondition)
        }
    }
}

@Suite("Two-factor and merges")
struct TwoFactorMergeTests {
    typealias Harness = IdentityHarness

    /// A guest logging in to a two-factor account is merged only once the second factor is given.
    @Test func guestIsMergedIntoATwoFactorAccountOnlyAfterTheChallenge() async throws {
        try await Harness.with { harness in
            let (app, _, totp, _) = try await TwoFactorTests().enrolledAccount(harness, email: "guarded@example.com")
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "guest-device")
            let login = try await harness.player.loginWithPassword(
                .init(
                    appId: app.appId, device: .init(deviceId: "guest-device"), email: "guarded@example.com",
                    password: "correct horse"),
                context: Harness.playerContext(guest, appID: app.appId))
            let challenge = try TwoFactorTests().challengeID(login)
            let before = try await harness.internalHandlers.resolveUsers(
                .init(userIds: [guest.userID]), context: Harness.serviceContext)
            #expect(before.users.first?.canonicalId == guest.userID)
            let done = try await harness.player.completeTwoFactorLogin(
                .init(challengeId: challenge, code: try TwoFactorTests().unusedCode(totp)), context: Harness.anonymous)
            #expect(!done.mergeId.isEmpty)
            let after = try await harness.internalHandlers.resolveUsers(
                .init(userIds: [guest.userID]), context: Harness.serviceContext)
            #expect(after.users.first?.canonicalId == login.userID)
        }
    }
}
