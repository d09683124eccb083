import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Email verification, email change and password reset (docs/identity.md, "Email").
extension PlayerHandlers {
    static let wrongEmailCode = "the code is wrong or has expired; ask for a new one"

    func verifyEmail(
        _ request: IdentityV1.VerifyEmailRequest, context: RequestContext
    ) async throws -> IdentityV1.VerifyEmailResponse {
        let (userID, appID) = try await dependencies.player(context)
        let code = try Self.emailCode(request.code, kind: .verifyEmail)
        let hash = IdentityMail.hash(
            code: code, kind: .verifyEmail, subject: userID.hex, secrets: dependencies.secretKeys)
        let now = dependencies.clock()
        let codes = EmailCodeStore(database: dependencies.pool)
        guard
            let found = try await codes.checkVerification(
                userID: userID, hash: hash, now: now, maximumAttempts: dependencies.configuration.mail.maximumAttempts),
            found.matches
        else { throw IdentityError.invalidArgument(Self.wrongEmailCode) }
        let user = try await dependencies.pool.transaction { transaction in
            guard
                try await EmailCodeStore(database: transaction).consume(
                    userID: userID, purpose: .verify, hash: hash, now: now)
            else { throw IdentityError.invalidArgument(Self.wrongEmailCode) }
            try await MailStore(database: transaction).markVerified(
                userID: userID, email: found.email, loginEmail: found.setsLoginEmail)
            return try await UserStore(database: transaction).user(userID, appID: appID)
        }
        return IdentityV1.VerifyEmailResponse(user: user.message)
    }

    func resendVerification(
        _ request: IdentityV1.ResendVerificationRequest, context: RequestContext
    ) async throws -> IdentityV1.ResendVerificationResponse {
        let (userID, appID) = try await dependencies.player(context)
        let languages = try IdentityMail.languages(request.language)
        let target: (email: String, setsLoginEmail: Bool)
        if let pending = try await EmailCodeStore(database: dependencies.pool).pendingVerification(userID: userID) {
            target = pending
        } else {
            let user = try await UserStore(database: dependencies.pool).user(userID, appID: nil)
            guard let email = user.email, !user.emailVerified else {
                throw IdentityError.failedPrecondition("this account has no email waiting for verification")
            }
            target = (email, false)
        }
        try await chargeVerificationMail(userID: userID)
        let application = try await dependencies.applications.application(appID)
        try await dependencies.pool.transaction { transaction in
            try await sendCode(
                .verifyEmail, userID: userID, email: target.email, setsLoginEmail: target.setsLoginEmail,
                application: application, languages: languages, in: transaction)
        }
        return IdentityV1.ResendVerificationResponse()
    }

    func changeEmail(
        _ request: IdentityV1.ChangeEmailRequest, context: RequestContext
    ) async throws -> IdentityV1.ChangeEmailResponse {
        let (userID, appID) = try await dependencies.player(context)
        let password = try Validation.text(request.password, field: "password", maximum: 128)
        let email = try Validation.email(request.newEmail)
        let languages = try IdentityMail.languages(request.language)
        guard let stored = try await CredentialStore(database: dependencies.pool).password(userID: userID) else {
            throw IdentityError.failedPrecondition(
                "this account has no password; add one with SignUp while signed in, then change its email")
        }
        // A wrong password counts as a failed login of the account, as ChangePassword's does.
        guard try await currentPasswordMatches(password, stored: stored, context: context) else {
            throw IdentityError.invalidArgument("password is wrong")
        }
        if try await MailStore(database: dependencies.pool).loginEmailTaken(email, by: userID) {
            throw IdentityError.alreadyExists("an account with email \(email) already exists")
        }
        try await chargeVerificationMail(userID: userID)
        let application = try await dependencies.applications.application(appID)
        try await dependencies.pool.transaction { transaction in
            try await sendCode(
                .verifyEmail, userID: userID, email: email, setsLoginEmail: true, application: application,
                languages: languages, in: transaction)
        }
        return IdentityV1.ChangeEmailResponse()
    }

    func requestPasswordReset(
        _ request: IdentityV1.RequestPasswordResetRequest, context: RequestContext
    ) async throws -> IdentityV1.RequestPasswordResetResponse {
        let appID = try Validation.raveID(request.appId, field: "app_id")
        let email = try Validation.text(request.email, field: "email", maximum: 254)
        let languages = try IdentityMail.languages(request.language)
        let application = try await dependencies.applications.application(appID)
        let policy = dependencies.configuration.mail
        let now = dependencies.clock()
        // Counted whether the email has an account or not, so the limits tell nothing either.
        let limits = MailStore(database: dependencies.pool)
        var keys = [("reset:email:\(email.lowercased())", policy.resetsPerEmail)]
        if let address = context.metadata["rave-client-address"], !address.isEmpty {
            keys.append(("reset:address:\(LoginThrottle.network(of: address))", policy.resetsPerAddress))
        }
        for (key, limit) in keys {
            if let wait = try await limits.charge(key: key, limit: limit, window: policy.window, now: now) {
                throw IdentityError.resourceExhausted("too many password reset requests; try again in \(wait) s")
            }
        }
        // The same work follows either way but the writes; the mail leaves later, from the outbox.
        let account = try await CredentialStore(database: dependencies.pool).password(email: email)
        try await dependencies.pool.transaction { transaction in
            guard let account else { return }
            guard let stored = try await CredentialStore(database: transaction).password(userID: account.userID)
            else { return }
            try await sendCode(
                .passwordReset, userID: account.userID, email: stored.email, setsLoginEmail: false,
                application: application, languages: languages, in: transaction)
        }
        return IdentityV1.RequestPasswordResetResponse()
    }

    func resetPassword(
        _ request: IdentityV1.ResetPasswordRequest, context: RequestContext
    ) async throws -> IdentityV1.ResetPasswordResponse {
        let email = try Validation.text(request.email, field: "email", maximum: 254)
        let newPassword = try Validation.password(request.newPassword, field: "new_password")
        let code = try Self.emailCode(request.code, kind: .passwordReset)
        let hash = IdentityMail.hash(
            code: code, kind: .passwordReset, subject: email, secrets: dependencies.secretKeys)
        let now = dependencies.clock()
        guard
            let found = try await EmailCodeStore(database: dependencies.pool).checkReset(
                email: email, hash: hash, now: now, maximumAttempts: dependencies.configuration.mail.maximumAttempts),
            found.matches
        else { throw IdentityError.invalidArgument(Self.wrongEmailCode) }
        let userID = found.userID
        let twoFactor =
            try await TwoFactorStore(database: dependencies.pool, secrets: dependencies.secretKeys)
            .state(userID: userID)?.confirmed == true
        if twoFactor, request.twoFactorCode.isEmpty {
            throw IdentityError.invalidArgument("two_factor_code is required: this account uses two-factor")
        }
        let newHash = try await dependencies.passwordHashers.withSlot { try await $0.hash(newPassword) }
        let reset = { () async throws -> Int? in
            try await dependencies.pool.transaction { transaction -> Int? in
                if twoFactor {
                    guard try await spendSecondFactor(request.twoFactorCode, userID: userID, in: transaction) else {
                        return nil
                    }
                }
                guard
                    try await EmailCodeStore(database: transaction).consume(
                        userID: userID, purpose: .reset, hash: hash, now: now)
                else { throw IdentityError.invalidArgument(Self.wrongEmailCode) }
                try await CredentialStore(database: transaction).replacePassword(userID: userID, hash: newHash)
                return try await SessionStore(database: transaction).revokeOthers(
                    userID: userID, keeping: nil, reason: "password")
            }
        }
        let ended: Int
        if twoFactor {
            ended = try await codeAttempt(
                userID: userID, context: context, failure: .invalidArgument(Self.wrongCode), reset)
        } else {
            ended = try await reset() ?? 0
        }
        return IdentityV1.ResetPasswordResponse(revokedSessions: UInt32(clamping: ended))
    }

    // MARK: - Codes and mails

    /// Counts a verification mail of `userID`; RESOURCE_EXHAUSTED past the limit.
    func chargeVerificationMail(userID: RaveID) async throws {
        let policy = dependencies.configuration.mail
        if let wait = try await MailStore(database: dependencies.pool).charge(
            key: "verify:\(userID.hex)", limit: policy.verificationMailsPerAccount, window: policy.window,
            now: dependencies.clock())
        {
            throw IdentityError.resourceExhausted("too many verification mails; try again in \(wait) s")
        }
    }

    /// Issues a new code of `kind` for `userID` (replacing the live one), and writes its mail to the outbox, in
    /// `transaction`.
    func sendCode(
        _ kind: IdentityMail.Kind, userID: RaveID, email: String, setsLoginEmail: Bool,
        application: ApplicationRecord, languages: [String], in transaction: PostgresTransaction
    ) async throws {
        let secrets = dependencies.secretKeys
        let lifetime = dependencies.configuration.mail.lifetime(kind)
        let code = try IdentityMail.newCode(digits: kind.digits)
        let subject = kind == .verifyEmail ? userID.hex : email
        try await EmailCodeStore(database: transaction).replace(
            userID: userID, purpose: kind == .verifyEmail ? .verify : .reset, email: email,
            setsLoginEmail: setsLoginEmail,
            hash: IdentityMail.hash(code: code, kind: kind, subject: subject, secrets: secrets),
            now: dependencies.clock(), lifetime: lifetime)
        let template =
            try await MailStore(database: transaction).template(
                appID: application.id, kind: kind.rawValue, languages: languages) ?? IdentityMail.builtIn(kind)
        let minutes = Int(lifetime / 60)
        let mail = IdentityMail.Outgoing(
            kind: kind, to: email,
            fromName: String(application.name.unicodeScalars.filter { $0.properties.generalCategory != .control }),
            subject: IdentityMail.render(template.subject, code: code, appName: application.name, minutes: minutes),
            body: IdentityMail.render(template.body, code: code, appName: application.name, minutes: minutes))
        try await IdentityMail.enqueue(mail, userID: userID, secrets: secrets, in: transaction)
    }

    /// A code as the mail of `kind` carries it (its digits; spaces a player typed are ignored).
    static func emailCode(_ text: String, kind: IdentityMail.Kind) throws(IdentityError) -> String {
        let code = text.filter { $0 != " " }
        guard code.count == kind.digits, code.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw .invalidArgument("code must be the \(kind.digits) digits of the mail")
        }
        return code
    }
}

extension AdminHandlers {
    func setMailTemplate(
        _ request: IdentityV1.SetMailTemplateRequest, context: RequestContext
    ) async throws -> IdentityV1.SetMailTemplateResponse {
        let actor = try await dependencies.admin(context)
        let appID = try Validation.raveID(request.appId, field: "app_id")
        guard let kind = IdentityMail.Kind(request.kind) else {
            throw IdentityError.invalidArgument(
                "kind must be MAIL_KIND_VERIFY_EMAIL, MAIL_KIND_PASSWORD_RESET or MAIL_KIND_EXPORT_READY")
        }
        guard let language = try IdentityMail.languages(request.language).first, !request.language.isEmpty else {
            throw IdentityError.invalidArgument("language is required (BCP 47, e.g. \"en\" or \"pt-BR\")")
        }
        try actor.requirePublisher(try await dependencies.applications.application(appID).publisherID)
        var text: (subject: String, body: String)?
        if !request.subject.isEmpty || !request.body.isEmpty {
            let subject = try Validation.text(request.subject, field: "subject", maximum: 200)
            guard !subject.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw IdentityError.invalidArgument("subject must be one line without control characters")
            }
            let body = try Validation.text(request.body, field: "body", maximum: 10_000)
            // The export mail carries no code.
            guard kind == .exportReady || body.contains("{{code}}") else {
                throw IdentityError.invalidArgument("body must contain {{code}}")
            }
            text = (subject, body)
        }
        try await MailStore(database: dependencies.pool).setTemplate(
            appID: appID, kind: kind.rawValue, language: language, text: text)
        return IdentityV1.SetMailTemplateResponse()
    }
}
