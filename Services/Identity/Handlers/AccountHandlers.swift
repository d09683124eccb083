import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Guest login, sign-up and password login.
extension PlayerHandlers {
    func guestLogin(
        _ request: IdentityV1.GuestLoginRequest, context: RequestContext
    ) async throws -> IdentityV1.LoginResponse {
        let appID = try Validation.raveID(request.appId, field: "app_id")
        let device = try Validation.device(request.device)
        let application = try await dependencies.applications.application(appID)
        let login = try await GuestLoginStore(database: dependencies.pool).login(
            appID: appID, crossAppPublisher: application.settings.crossAppLogin ? application.publisherID : nil,
            device: device, sessionLifetime: dependencies.configuration.sessionLifetime, now: dependencies.clock())
        if let ban = login.ban {
            // Banned before the login: it opened no session.
            guard !login.refreshToken.isEmpty else { throw Bans.refusal(ban) }
            // Banned while it ran: its session ends here.
            try await dependencies.endSessionIfBanned(userID: login.user.id, sessionID: login.sessionID, ban: ban)
        }
        // A login cancels a scheduled deletion; one that started meanwhile ends the session it opened.
        var deletionCancelled = false
        if login.deletionScheduled {
            do {
                deletionCancelled = try await dependencies.deletions.cancelOnLogin(
                    login.user.id, database: dependencies.pool)
            } catch {
                try await SessionStore(database: dependencies.pool).revoke(
                    sessionID: login.sessionID, userID: login.user.id, reason: "deletion")
                throw error
            }
        }
        let tokens = try dependencies.tokens(
            userID: login.user.id, appID: appID, sessionID: login.sessionID, refreshToken: login.refreshToken,
            accountState: login.user.globalAccountState)
        return IdentityV1.LoginResponse(
            user: login.user.message, outcome: .tokens(tokens), created: login.source == .created,
            deletionCancelled: deletionCancelled)
    }

    func signUp(_ request: IdentityV1.SignUpRequest, context: RequestContext) async throws -> IdentityV1.LoginResponse {
        let appID = try Validation.raveID(request.appId, field: "app_id")
        let device = try Validation.device(request.device)
        let email = try Validation.email(request.email)
        let password = try Validation.password(request.password)
        let birthYear = try Validation.birthYear(request.birthYear)
        let country = try Validation.country(request.country)
        let username = request.username.isEmpty ? nil : try Validation.username(request.username)
        let languages = try IdentityMail.languages(request.language)
        let application = try await dependencies.applications.application(appID)
        let hash = try await dependencies.passwordHashers.withSlot { try await $0.hash(password) }
        // A signed-in guest becomes the new account instead of leaving an orphan behind.
        let current = context.caller.flatMap { $0.appID == application.id.hex ? RaveID($0.userID) : nil }
        let response = try await dependencies.pool.transaction { transaction in
            let users = UserStore(database: transaction)
            var userID: RaveID? = nil
            if let current, let canonical = try await users.canonicalIDs([current])[current],
                try await !users.user(canonical, appID: nil).hasPassword
            {
                userID = canonical
            }
            let created = userID == nil
            let accountID: RaveID
            if let userID { accountID = userID } else { accountID = try await users.createUser() }
            try await CredentialStore(database: transaction).addPassword(userID: accountID, email: email, hash: hash)
            try await ProfileStore(database: transaction).recordSignUp(
                userID: accountID, email: email, birthYear: birthYear, country: country,
                newsletter: request.newsletterOptIn, username: username)
            // The verification mail leaves with the account (the outbox), or not at all.
            try await sendCode(
                .verifyEmail, userID: accountID, email: email, setsLoginEmail: false, application: application,
                languages: languages, in: transaction)
            // Sign-up's mail counts toward the account's verification mails (never refused: the account is new).
            let policy = dependencies.configuration.mail
            _ = try await MailStore(database: transaction).charge(
                key: "verify:\(accountID.hex)", limit: .max, window: policy.window, now: dependencies.clock())
            var response = try await finishLogin(
                userID: accountID, appID: appID, device: device, created: created, explicit: true, in: transaction)
            response.signUpData = Self.signUpData(
                birthYear: birthYear, country: country, newsletter: request.newsletterOptIn)
            return response
        }
        return try await dependencies.checkedAfterCommit(response)
    }

    func loginWithPassword(
        _ request: IdentityV1.LoginWithPasswordRequest, context: RequestContext
    ) async throws -> IdentityV1.LoginResponse {
        let appID = try Validation.raveID(request.appId, field: "app_id")
        let device = try Validation.device(request.device)
        let email = try Validation.text(request.email, field: "email", maximum: 254)
        let password = try Validation.text(request.password, field: "password", maximum: 128)
        _ = try await dependencies.applications.application(appID)
        let credentials = CredentialStore(database: dependencies.pool)
        let address = context.metadata["rave-client-address"]
        // A hashing slot first (refused at capacity before anything else is spent), then the throttle's charge,
        // and only then the hash.
        let stored = try await dependencies.passwordHashers.withSlot { hashing in
            let verified = try await dependencies.loginThrottle.attempt(
                .password, account: email.lowercased(), address: address
            ) { () async throws -> (userID: RaveID, hash: String)? in
                let stored = try await credentials.password(email: email)
                // An unknown email is hashed against a decoy, so the answer's timing does not tell whether it exists.
                return try await hashing.verify(password, against: stored?.hash) ? stored : nil
            }
            guard let verified else { throw IdentityError.unauthenticated("the email or password is wrong") }
            if dependencies.passwordHashers.hasher.needsRehash(verified.hash) {
                try await credentials.replacePassword(userID: verified.userID, hash: try await hashing.hash(password))
            }
            return verified
        }
        // A signed-in guest of this app logging in to the account is merged into it, as with provider logins.
        let callerID = context.caller.flatMap { $0.appID == appID.hex ? RaveID($0.userID) : nil }
        let response = try await dependencies.pool.transaction { transaction in
            let users = UserStore(database: transaction)
            var guest: RaveID? = nil
            if let callerID, let canonical = try await users.canonicalIDs([callerID])[callerID],
                canonical != stored.userID,
                try await users.user(canonical, appID: nil).accountState != .authenticated
            {
                guest = canonical
            }
            return try await loginOrChallenge(
                userID: stored.userID, appID: appID, device: device, mergeSource: guest, in: transaction)
        }
        return try await dependencies.checkedAfterCommit(response)
    }

    /// Records the device and app use, points the device at the user and starts a session.
    ///
    /// `explicit` logins (password, provider) enable cross-app login on the device; a guest login keeps it as is.
    /// The login cancels the user's scheduled deletion (`deletion_cancelled`).
    func finishLogin(
        userID: RaveID, appID: RaveID, device: IdentityV1.DeviceInfo, created: Bool, explicit: Bool = false,
        in transaction: PostgresTransaction
    ) async throws -> IdentityV1.LoginResponse {
        let deletionCancelled = try await dependencies.deletions.cancelOnLogin(userID, database: transaction)
        let logins = DeviceLoginStore(database: transaction)
        if explicit {
            try await logins.setDeviceUser(appID: appID, deviceID: device.deviceId, userID: userID, crossApp: true)
        }
        let (sessionID, refreshToken) = try await SessionStore(database: transaction).openSession(
            userID: userID, appID: appID, device: device, lifetime: dependencies.configuration.sessionLifetime)
        // Read after the session's writes, as the state the token carries must be the one the session starts with.
        let user = try await UserStore(database: transaction).user(userID, appID: appID)
        let tokens = try dependencies.tokens(
            userID: userID, appID: appID, sessionID: sessionID, refreshToken: refreshToken,
            accountState: user.globalAccountState)
        return IdentityV1.LoginResponse(
            user: user.message, outcome: .tokens(tokens), created: created, deletionCancelled: deletionCancelled)
    }

    /// The seed SDK's sign-up data: COPPA for the US (13 or older for certain), the newsletter for Canada.
    static func signUpData(
        birthYear: Int32, country: String, newsletter: Bool, now: Date = Date()
    ) -> IdentityV1.SignUpData {
        let year = Int32(Calendar(identifier: .gregorian).component(.year, from: now))
        // With only a year, the player may not have had this year's birthday yet: count the younger age.
        let passedCoppa = country != "US" || year - birthYear - 1 >= 13
        return IdentityV1.SignUpData(
            passedCoppaCheck: passedCoppa, acceptedNewsletter: country == "CA" && newsletter, birthYear: birthYear)
    }
}
