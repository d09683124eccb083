import Foundation
import RaveMail
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTestSupport
import Testing

@testable import Identity

/// Email verification, email change and password reset (docs/identity.md, "Email"), with mails read from a real SMTP
/// server the service sends to (`SMTPSink`): the codes come from the mails, never from the database.
@Suite("Email verification and password reset")
struct EmailTests {
    typealias Harness = IdentityHarness
    static let password = "correct horse"
    static let address = ["rave-client-address": "198.51.100.20"]

    /// A harness whose outbox is delivered to a fresh SMTP sink.
    static func with(
        configure: @escaping (inout IdentityConfiguration) -> Void = { _ in }, clock: TestClock? = nil,
        _ body: (Harness, SMTPSink) async throws -> Void
    ) async throws {
        let sink = try SMTPSink()
        defer { sink.stop() }
        let settings = try SMTPSettings(url: sink.url, from: "no-reply@rave.test", timeout: .seconds(5))
        try await Harness.with(
            configure: {
                $0.smtp = settings
                configure(&$0)
            }, clock: clock
        ) { harness in
            let delivery = try harness.participantDelivery(
                mail: IdentityMailer(
                    sender: SMTPSender(settings: settings), secrets: harness.dependencies.secretKeys,
                    logger: Logger(label: "mail", level: .critical)))
            let running = Task { try await delivery.run() }
            var failure: (any Error)?
            do { try await body(harness, sink) } catch { failure = error }
            await delivery.shutdown()
            try await running.value
            if let failure { throw failure }
        }
    }

    /// The code a mail carries: the first run of `digits` digits in its body.
    static func code(in mail: SMTPSink.Mail, digits: Int) throws -> String {
        let runs = mail.body.split { !($0.isASCII && $0.isNumber) }
        return String(try #require(runs.first { $0.count == digits }, "no \(digits)-digit code in \(mail.body)"))
    }

    func signUp(
        _ harness: Harness, app: IdentityV1.Application, email: String, device: String = "phone",
        language: String = ""
    ) async throws -> IdentityV1.LoginResponse {
        try await harness.player.signUp(
            .init(
                appId: app.appId, device: .init(deviceId: device), email: email, password: Self.password,
                birthYear: 1990, country: "DE", language: language),
            context: Harness.anonymous)
    }

    func login(
        _ harness: Harness, app: IdentityV1.Application, email: String, password: String, device: String = "tablet"
    ) async throws -> IdentityV1.LoginResponse {
        try await harness.player.loginWithPassword(
            .init(appId: app.appId, device: .init(deviceId: device), email: email, password: password),
            context: Harness.context(caller: nil, metadata: Self.address))
    }

    func requestReset(
        _ harness: Harness, app: IdentityV1.Application, email: String, language: String = "",
        address: String = "198.51.100.20"
    ) async throws {
        _ = try await harness.player.requestPasswordReset(
            .init(appId: app.appId, email: email, language: language),
            context: Harness.context(caller: nil, metadata: ["rave-client-address": address]))
    }

    func reset(
        _ harness: Harness, email: String, code: String, to newPassword: String = "battery staple",
        twoFactor: String = ""
    ) async throws -> IdentityV1.ResetPasswordResponse {
        try await harness.player.resetPassword(
            .init(email: email, code: code, newPassword: newPassword, twoFactorCode: twoFactor),
            context: Harness.context(caller: nil, metadata: Self.address))
    }

    // MARK: - Verification

    @Test func signUpMailsASingleUseCodeThatVerifiesTheEmail() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, app: app, email: "Ana@Example.com")
            #expect(account.user?.emailVerified == false)
            let mail = try await sink.waitForMail(to: "ana@example.com")
            let code = try Self.code(in: mail, digits: 6)
            #expect(mail.subject == "\(code) is your Game verification code")
            #expect(mail.body.contains("expires in 30 minutes"))
            #expect(mail.header("From") == "Game <no-reply@rave.test>")
            let context = Harness.playerContext(account, appID: app.appId)
            let verified = try await harness.player.verifyEmail(.init(code: code), context: context)
            #expect(verified.user?.emailVerified == true)
            #expect(verified.user?.email == "Ana@Example.com")
            let again = await statusCode {
                _ = try await harness.player.verifyEmail(.init(code: code), context: context)
            }
            #expect(again?.code == .invalidArgument)
            #expect(again?.message == PlayerHandlers.wrongEmailCode)
            let malformed = await statusCode {
                _ = try await harness.player.verifyEmail(.init(code: "12ab56"), context: context)
            }
            #expect(malformed?.code == .invalidArgument)
            #expect(malformed?.message == "code must be the 6 digits of the mail")
        }
    }

    @Test func aVerificationCodeExpiresAfterThirtyMinutes() async throws {
        let clock = TestClock(Date())
        try await Self.with(clock: clock) { harness, sink in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, app: app, email: "late@example.com")
            let code = try Self.code(in: try await sink.waitForMail(to: "late@example.com"), digits: 6)
            clock.advance(by: 1801)
            let expired = await statusCode {
                _ = try await harness.player.verifyEmail(
                    .init(code: code), context: Harness.playerContext(account, appID: app.appId))
            }
            #expect(expired?.code == .invalidArgument)
        }
    }

    @Test func fiveWrongCodesKillTheVerificationCode() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, app: app, email: "guess@example.com")
            let code = try Self.code(in: try await sink.waitForMail(to: "guess@example.com"), digits: 6)
            let context = Harness.playerContext(account, appID: app.appId)
            let wrong = code == "000000" ? "111111" : "000000"
            for _ in 0..<5 {
                let answer = await statusCode {
                    _ = try await harness.player.verifyEmail(.init(code: wrong), context: context)
                }
                #expect(answer?.code == .invalidArgument)
            }
            let dead = await statusCode {
                _ = try await harness.player.verifyEmail(.init(code: code), context: context)
            }
            #expect(dead?.code == .invalidArgument)
            // A new code (ResendVerification) works again.
            _ = try await harness.player.resendVerification(.init(), context: context)
            let fresh = try Self.code(in: try await sink.waitForMail(to: "guess@example.com", after: 1), digits: 6)
            #expect(
                try await harness.player.verifyEmail(.init(code: fresh), context: context).user?.emailVerified == true)
        }
    }

    @Test func resendReplacesTheCodeAndIsRateLimited() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, app: app, email: "again@example.com")
            let first = try Self.code(in: try await sink.waitForMail(to: "again@example.com"), digits: 6)
            let context = Harness.playerContext(account, appID: app.appId)
            // Sign-up's mail and four more in the hour; the sixth is refused.
            for _ in 0..<4 { _ = try await harness.player.resendVerification(.init(), context: context) }
            let refused = await statusCode {
                _ = try await harness.player.resendVerification(.init(), context: context)
            }
            #expect(refused?.code == .resourceExhausted)
            #expect(refused?.message.hasPrefix("too many verification mails; try again in ") == true)
            let last = try Self.code(in: try await sink.waitForMail(to: "again@example.com", after: 4), digits: 6)
            if first != last {
                let old = await statusCode {
                    _ = try await harness.player.verifyEmail(.init(code: first), context: context)
                }
                #expect(old?.code == .invalidArgument)
            }
            #expect(
                try await harness.player.verifyEmail(.init(code: last), context: context).user?.emailVerified == true)
            let nothingLeft = await statusCode {
                _ = try await harness.player.resendVerification(.init(), context: context)
            }
            #expect(nothingLeft?.code == .failedPrecondition || nothingLeft?.code == .resourceExhausted)
        }
    }

    @Test func changeEmailNeedsThePasswordAndTakesEffectOnceVerified() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, app: app, email: "old@example.com")
            _ = try await sink.waitForMail(to: "old@example.com")
            let context = Harness.playerContext(account, appID: app.appId)
            let wrong = await statusCode {
                _ = try await harness.player.changeEmail(
                    .init(password: "wrong password", newEmail: "new@example.com"), context: context)
            }
            #expect(wrong?.code == .invalidArgument)
            #expect(wrong?.message == "password is wrong")
            _ = try await harness.player.changeEmail(
                .init(password: Self.password, newEmail: "new@example.com"), context: context)
            let code = try Self.code(in: try await sink.waitForMail(to: "new@example.com"), digits: 6)
            // Until the new address is proven, the old one still logs in and the new one does not.
            _ = try await login(harness, app: app, email: "old@example.com", password: Self.password)
            let early = await statusCode {
                _ = try await login(harness, app: app, email: "new@example.com", password: Self.password)
            }
            #expect(early?.code == .unauthenticated)
            let verified = try await harness.player.verifyEmail(.init(code: code), context: context)
            #expect(verified.user?.email == "new@example.com" && verified.user?.emailVerified == true)
            _ = try await login(harness, app: app, email: "new@example.com", password: Self.password)
            let old = await statusCode {
                _ = try await login(harness, app: app, email: "old@example.com", password: Self.password)
            }
            #expect(old?.code == .unauthenticated)
        }
    }

    /// A reset code mailed to the old login email ends when a new login email is verified.
    @Test func verifyingANewLoginEmailEndsAResetCodeMailedToTheOldOne() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, app: app, email: "before@example.com")
            _ = try await sink.waitForMail(to: "before@example.com")
            try await requestReset(harness, app: app, email: "before@example.com")
            let resetCode = try Self.code(in: try await sink.waitForMail(to: "before@example.com", after: 1), digits: 8)
            let context = Harness.playerContext(account, appID: app.appId)
            _ = try await harness.player.changeEmail(
                .init(password: Self.password, newEmail: "after@example.com"), context: context)
            let code = try Self.code(in: try await sink.waitForMail(to: "after@example.com"), digits: 6)
            _ = try await harness.player.verifyEmail(.init(code: code), context: context)
            let stale = await statusCode { _ = try await reset(harness, email: "before@example.com", code: resetCode) }
            #expect(stale?.code == .invalidArgument)
        }
    }

    @Test func changeEmailToAnotherAccountsLoginEmailIsRefused() async throws {
        try await Self.with { harness, _ in
            let app = try await harness.makeApplication()
            _ = try await signUp(harness, app: app, email: "taken@example.com", device: "a")
            let account = try await signUp(harness, app: app, email: "mine@example.com", device: "b")
            let taken = await statusCode {
                _ = try await harness.player.changeEmail(
                    .init(password: Self.password, newEmail: "TAKEN@example.com"),
                    context: Harness.playerContext(account, appID: app.appId))
            }
            #expect(taken?.code == .alreadyExists)
        }
    }

    /// FindUser and contact matching see an email only once it is verified.
    @Test func findUserAndLookupExternalMatchAnEmailOnlyOnceVerified() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, app: app, email: "found@example.com")
            let code = try Self.code(in: try await sink.waitForMail(to: "found@example.com"), digits: 6)
            let friend = Harness.playerContext(
                try await harness.guestLogin(appID: app.appId, deviceID: "friend"), appID: app.appId)
            let before = await statusCode {
                _ = try await harness.player.findUser(.init(key: .email("found@example.com")), context: friend)
            }
            #expect(before?.code == .notFound)
            let unmatched = try await harness.internalHandlers.lookupExternal(
                .init(emails: ["found@example.com"]), context: Harness.serviceContext)
            #expect(unmatched.matches.isEmpty)
            _ = try await harness.player.verifyEmail(
                .init(code: code), context: Harness.playerContext(account, appID: app.appId))
            let found = try await harness.player.findUser(.init(key: .email("found@example.com")), context: friend)
            #expect(found.user?.userId == account.userID)
            let matched = try await harness.internalHandlers.lookupExternal(
                .init(emails: ["found@example.com"]), context: Harness.serviceContext)
            #expect(matched.matches.map(\.userId) == [account.userID])
        }
    }

    // MARK: - Password reset

    @Test func aResetCodeSetsTheNewPasswordEndsEverySessionAndIsSingleUse() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            let phone = try await signUp(harness, app: app, email: "lost@example.com")
            let tablet = try await login(harness, app: app, email: "lost@example.com", password: Self.password)
            try await requestReset(harness, app: app, email: "LOST@example.com")
            let mail = try await sink.waitForMail(to: "lost@example.com", after: 1)
            #expect(mail.subject == "Reset your Game password")
            let code = try Self.code(in: mail, digits: 8)
            let weak = await statusCode {
                _ = try await reset(harness, email: "lost@example.com", code: code, to: "short")
            }
            #expect(weak?.code == .invalidArgument)
            let done = try await reset(harness, email: "lost@example.com", code: code)
            #expect(done.revokedSessions == 2)
            for session in [phone, tablet] {
                let refresh = await statusCode {
                    _ = try await harness.player.refreshSession(
                        .init(refreshToken: session.sessionTokens?.refreshToken ?? ""), context: Harness.anonymous)
                }
                #expect(refresh?.code == .unauthenticated)
            }
            let oldPassword = await statusCode {
                _ = try await login(harness, app: app, email: "lost@example.com", password: Self.password)
            }
            #expect(oldPassword?.code == .unauthenticated)
            _ = try await login(harness, app: app, email: "lost@example.com", password: "battery staple")
            let reused = await statusCode { _ = try await reset(harness, email: "lost@example.com", code: code) }
            #expect(reused?.code == .invalidArgument)
            #expect(reused?.message == PlayerHandlers.wrongEmailCode)
        }
    }

    @Test func aResetRequestAnswersAlikeForUnknownEmailsAndMailsNobody() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            _ = try await signUp(harness, app: app, email: "known@example.com")
            _ = try await sink.waitForMail(to: "known@example.com")
            let unknown = try await harness.player.requestPasswordReset(
                .init(appId: app.appId, email: "nobody@example.com"), context: Harness.anonymous)
            let known = try await harness.player.requestPasswordReset(
                .init(appId: app.appId, email: "known@example.com"), context: Harness.anonymous)
            #expect(unknown.protobufBytes() == known.protobufBytes())
            _ = try await sink.waitForMail(to: "known@example.com", after: 1)
            #expect(sink.mails(to: "nobody@example.com").isEmpty)
            let guess = await statusCode { _ = try await reset(harness, email: "nobody@example.com", code: "12345678") }
            #expect(guess?.code == .invalidArgument)
            #expect(guess?.message == PlayerHandlers.wrongEmailCode)
        }
    }

    @Test func resetRequestsAreLimitedPerEmailAndPerAddress() async throws {
        try await Self.with(configure: { $0.mail.resetsPerAddress = 8 }) { harness, _ in
            let app = try await harness.makeApplication()
            // Per email, whether it has an account or not: five an hour.
            for _ in 0..<5 {
                try await requestReset(harness, app: app, email: "flood@example.com", address: "192.0.2.1")
            }
            let perEmail = await statusCode {
                try await requestReset(harness, app: app, email: "flood@example.com", address: "192.0.2.99")
            }
            #expect(perEmail?.code == .resourceExhausted)
            #expect(perEmail?.message.hasPrefix("too many password reset requests; try again in ") == true)
            // Per address: other emails count too (8 here: 5 above and 3 more), IPv6 by its /64.
            for index in 0..<3 {
                try await requestReset(harness, app: app, email: "a\(index)@example.com", address: "192.0.2.1")
            }
            let perAddress = await statusCode {
                try await requestReset(harness, app: app, email: "b@example.com", address: "192.0.2.1")
            }
            #expect(perAddress?.code == .resourceExhausted)
            for index in 0..<8 {
                try await requestReset(
                    harness, app: app, email: "c\(index)@example.com", address: "2001:db8::\(index + 1)")
            }
            let sameNetwork = await statusCode {
                try await requestReset(harness, app: app, email: "d@example.com", address: "2001:db8::ffff")
            }
            #expect(sameNetwork?.code == .resourceExhausted)
        }
    }

    @Test func wrongResetCodesAreCountedAndKillTheCode() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            _ = try await signUp(harness, app: app, email: "brute@example.com")
            try await requestReset(harness, app: app, email: "brute@example.com")
            let code = try Self.code(in: try await sink.waitForMail(to: "brute@example.com", after: 1), digits: 8)
            let wrong = code == "00000000" ? "11111111" : "00000000"
            for _ in 0..<5 {
                let answer = await statusCode { _ = try await reset(harness, email: "brute@example.com", code: wrong) }
                #expect(answer?.code == .invalidArgument)
            }
            let dead = await statusCode { _ = try await reset(harness, email: "brute@example.com", code: code) }
            #expect(dead?.code == .invalidArgument)
            _ = try await login(harness, app: app, email: "brute@example.com", password: Self.password)
        }
    }

    @Test func aResetCodeExpires() async throws {
        let clock = TestClock(Date())
        try await Self.with(clock: clock) { harness, sink in
            let app = try await harness.makeApplication()
            _ = try await signUp(harness, app: app, email: "slow@example.com")
            try await requestReset(harness, app: app, email: "slow@example.com")
            let code = try Self.code(in: try await sink.waitForMail(to: "slow@example.com", after: 1), digits: 8)
            clock.advance(by: 1801)
            let expired = await statusCode { _ = try await reset(harness, email: "slow@example.com", code: code) }
            #expect(expired?.code == .invalidArgument)
        }
    }

    @Test func aResetNeedsTheSecondFactorWhenEnrolled() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication(settings: .init(twoFactorAllowed: true, crossAppLogin: true))
            let account = try await signUp(harness, app: app, email: "tf@example.com")
            let context = Harness.playerContext(account, appID: app.appId)
            let enable = try await harness.player.enableTwoFactor(.init(), context: context)
            let totp = try #require(TOTP(base32Secret: enable.secret))
            let backup = try await harness.player.confirmTwoFactor(
                .init(code: try totp.code(at: Date())), context: context
            ).backupCodes
            try await requestReset(harness, app: app, email: "tf@example.com")
            let code = try Self.code(in: try await sink.waitForMail(to: "tf@example.com", after: 1), digits: 8)
            let missing = await statusCode { _ = try await reset(harness, email: "tf@example.com", code: code) }
            #expect(missing?.code == .invalidArgument)
            #expect(missing?.message == "two_factor_code is required: this account uses two-factor")
            let wrong = await statusCode {
                _ = try await reset(harness, email: "tf@example.com", code: code, twoFactor: "00000-00000")
            }
            #expect(wrong?.code == .invalidArgument)
            #expect(
                try await reset(harness, email: "tf@example.com", code: code, twoFactor: backup[0]).revokedSessions == 1
            )
        }
    }

    /// A ban is about the account, not its password: the reset goes through, the login is still refused.
    @Test func aBannedAccountMayResetButStillCannotLogIn() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            let account = try await signUp(harness, app: app, email: "banned@example.com")
            _ = try await harness.admin.banUser(
                .init(userId: account.userID, reason: "cheating"),
                context: Harness.context(
                    caller: Caller(userID: "", appID: "", sessionID: "", scopes: ["admin"]),
                    metadata: ["rave-caller-admin": "ops"]))
            try await requestReset(harness, app: app, email: "banned@example.com")
            let code = try Self.code(in: try await sink.waitForMail(to: "banned@example.com", after: 1), digits: 8)
            _ = try await reset(harness, email: "banned@example.com", code: code)
            let refused = await statusCode {
                _ = try await login(harness, app: app, email: "banned@example.com", password: "battery staple")
            }
            #expect(refused?.code == .permissionDenied)
        }
    }

    // MARK: - Templates and delivery

    @Test func templatesFollowTheAppAndLanguageWithEnglishBuiltIn() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            _ = try await harness.admin.setMailTemplate(
                .init(
                    appId: app.appId, kind: .passwordReset, language: "pt", subject: "Nova senha para {{app_name}}",
                    body: "Código: {{code}} (válido por {{minutes}} minutos)"),
                context: Harness.adminContext)
            let noCode = await statusCode {
                _ = try await harness.admin.setMailTemplate(
                    .init(appId: app.appId, kind: .passwordReset, language: "pt", subject: "x", body: "no code"),
                    context: Harness.adminContext)
            }
            #expect(noCode?.code == .invalidArgument)
            let injected = await statusCode {
                _ = try await harness.admin.setMailTemplate(
                    .init(
                        appId: app.appId, kind: .passwordReset, language: "pt", subject: "x\r\nBcc: a@b.c",
                        body: "{{code}}"),
                    context: Harness.adminContext)
            }
            #expect(injected?.code == .invalidArgument)
            _ = try await signUp(harness, app: app, email: "lingo@example.com", language: "pt-BR")
            let verification = try await sink.waitForMail(to: "lingo@example.com")
            #expect(verification.subject.hasSuffix("is your Game verification code"))
            try await requestReset(harness, app: app, email: "lingo@example.com", language: "pt-BR")
            let portuguese = try await sink.waitForMail(to: "lingo@example.com", after: 1)
            #expect(portuguese.subject == "Nova senha para Game")
            let code = try Self.code(in: portuguese, digits: 8)
            #expect(portuguese.body == "Código: \(code) (válido por 30 minutos)")
            try await requestReset(harness, app: app, email: "lingo@example.com", language: "fr")
            #expect(try await sink.waitForMail(to: "lingo@example.com", after: 2).subject == "Reset your Game password")
            _ = try await harness.admin.setMailTemplate(
                .init(appId: app.appId, kind: .passwordReset, language: "pt"), context: Harness.adminContext)
            try await requestReset(harness, app: app, email: "lingo@example.com", language: "pt")
            #expect(try await sink.waitForMail(to: "lingo@example.com", after: 3).subject == "Reset your Game password")
        }
    }

    /// A refusing server is retried with backoff until it takes the mail; the outbox holds the text sealed.
    @Test func mailsAreRetriedAndTheOutboxHoldsNoCodeInClear() async throws {
        try await Self.with { harness, sink in
            let app = try await harness.makeApplication()
            sink.setRefusing(true)
            _ = try await signUp(harness, app: app, email: "retry@example.com")
            try await eventually(timeout: .seconds(20)) {
                let rows = try await harness.pool.query(
                    PostgresQuery("SELECT max(attempts) AS attempts FROM outbox_events WHERE topic = 'identity.mail'"))
                let attempts: Int32? = try rows.first?.decode(Int32?.self, column: "attempts") ?? nil
                return (attempts ?? 0) >= 2
            }
            sink.setRefusing(false)
            let code = try Self.code(in: try await sink.waitForMail(to: "retry@example.com"), digits: 6)
            let rows = try await harness.pool.query(
                PostgresQuery("SELECT payload FROM outbox_events WHERE topic = 'identity.mail'"))
            for row in rows {
                let payload = try row.decode([UInt8].self, column: "payload")
                let text = String(decoding: payload, as: UTF8.self)
                #expect(!text.contains(code) && !text.contains("retry@example.com"))
            }
            #expect(!rows.isEmpty)
        }
    }

    /// Without SMTP settings a mail is logged as not sent and counts as delivered (development).
    @Test func withoutSMTPMailsAreMarkedDeliveredUnsent() async throws {
        try await Harness.with { harness in
            let delivery = try harness.participantDelivery(
                mail: IdentityMailer(
                    sender: nil, secrets: harness.dependencies.secretKeys,
                    logger: Logger(label: "mail", level: .critical)))
            let running = Task { try await delivery.run() }
            let app = try await harness.makeApplication()
            _ = try await signUp(harness, app: app, email: "dev@example.com")
            try await eventually(timeout: .seconds(20)) {
                let rows = try await harness.pool.query(
                    PostgresQuery(
                        "SELECT count(*) AS n FROM outbox_events WHERE topic = 'identity.mail' AND delivered_at IS NOT NULL"
                    ))
                return try rows.first?.decode(Int64.self, column: "n") == 1
            }
            await delivery.shutdown()
            try await running.value
        }
    }

    /// The sweeper deletes expired codes (and old mail counters) with the login throttle's idle counters.
    @Test func theSweeperDeletesExpiredCodes() async throws {
        let clock = TestClock(Date())
        try await Harness.with(clock: clock) { harness in
            let app = try await harness.makeApplication()
            _ = try await signUp(harness, app: app, email: "swept@example.com")
            func codes() async throws -> Int64 {
                try await harness.pool.query(PostgresQuery("SELECT count(*) AS n FROM email_codes")).first?
                    .decode(Int64.self, column: "n") ?? -1
            }
            #expect(try await codes() == 1)
            clock.advance(by: 1801)
            let sweeper = LoginThrottleSweeper(
                throttle: harness.dependencies.loginThrottle, interval: .milliseconds(20),
                logger: Logger(label: "sweeper", level: .critical))
            let running = Task { try await sweeper.run() }
            try await eventually(timeout: .seconds(10)) { try await codes() == 0 }
            await sweeper.shutdown()
            try await running.value
        }
    }

    @Test func smtpSettingsComeFromTheEnvironment() throws {
        let ring = try SecretKeyFile.ring()
        #expect(try IdentityConfiguration(environment: [:], secretKeys: ring).smtp == nil)
        let withoutFrom = #expect(throws: IdentityError.self) {
            try IdentityConfiguration(
                environment: ["RAVE_IDENTITY_SMTP_URL": "smtp://127.0.0.1:2525"], secretKeys: ring)
        }
        #expect(withoutFrom?.message.contains("RAVE_IDENTITY_SMTP_FROM") == true)
        #expect(throws: IdentityError.self) {
            try IdentityConfiguration(
                environment: [
                    "RAVE_IDENTITY_SMTP_URL": "smtp://127.0.0.1:2525", "RAVE_IDENTITY_SMTP_FROM": "a@b.test",
                    "RAVE_IDENTITY_SMTP_USER": "mailer",
                ], secretKeys: ring)
        }
        let passwordFile = FileManager.default.temporaryDirectory.appendingPathComponent("smtp-\(RaveID.random().hex)")
        try "s3cret\n".write(to: passwordFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: passwordFile) }
        let smtp = try #require(
            try IdentityConfiguration(
                environment: [
                    "RAVE_IDENTITY_SMTP_URL": "smtps://mail.example.com", "RAVE_IDENTITY_SMTP_FROM": "a@b.test",
                    "RAVE_IDENTITY_SMTP_USER": "mailer", "RAVE_IDENTITY_SMTP_PASSWORD_FILE": passwordFile.path,
                ], secretKeys: ring
            ).smtp)
        #expect(smtp.password == "s3cret" && smtp.username == "mailer" && smtp.encryption == .implicit)
    }
}
