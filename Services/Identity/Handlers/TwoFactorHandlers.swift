import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// TOTP two-factor (RFC 6238: SHA-1, 6 digits, 30 s, ±1 step): enrolment, backup codes and login challenges.
///
/// Every code attempt is charged to the login throttle (`LoginThrottle`, scope "2fa": the address and user pair,
/// the user, the address) before the code is checked, so guessing codes cannot be spread over logins.
extension PlayerHandlers {
    func enableTwoFactor(
        _ request: IdentityV1.EnableTwoFactorRequest, context: RequestContext
    ) async throws -> IdentityV1.EnableTwoFactorResponse {
        let (userID, appID) = try await dependencies.player(context)
        let application = try await dependencies.applications.application(appID)
        guard application.settings.twoFactorAllowed else {
            throw IdentityError.failedPrecondition("this app does not offer two-factor authentication")
        }
        let user = try await UserStore(database: dependencies.pool).user(userID, appID: appID)
        guard user.accountState == .authenticated else {
            throw IdentityError.failedPrecondition("two-factor needs a password or a provider login first")
        }
        let totp = try Self.cryptoCall { () throws(CryptoError) in try TOTP.generate() }
        guard
            try await TwoFactorStore(database: dependencies.pool, secrets: dependencies.secretKeys).begin(
                userID: userID, secret: totp.secret)
        else {
            throw IdentityError.failedPrecondition("two-factor is already enabled; disable it first to enrol again")
        }
        let account = user.username ?? user.email ?? userID.hex
        return .init(
            secret: totp.base32Secret,
            otpauthUrl: totp.provisioningURL(issuer: dependencies.configuration.twoFactorIssuer, account: account))
    }

    func confirmTwoFactor(
        _ request: IdentityV1.ConfirmTwoFactorRequest, context: RequestContext
    ) async throws -> IdentityV1.ConfirmTwoFactorResponse {
        let (userID, _) = try await dependencies.player(context)
        let codes = try Self.cryptoCall { () throws(CryptoError) in try BackupCodes.generate() }
        try await codeAttempt(userID: userID, context: context, failure: .invalidArgument(Self.wrongCode)) {
            try await confirm(code: request.code, codes: codes, userID: userID, context: context)
        }
        return .init(backupCodes: codes)
    }

    /// Confirms the enrolment with `code`; nil when the code is wrong.
    private func confirm(
        code: String, codes: [String], userID: RaveID, context: RequestContext
    ) async throws -> Void? {
        try await dependencies.pool.transaction { transaction in
            let store = TwoFactorStore(database: transaction, secrets: dependencies.secretKeys)
            guard let state = try await store.state(userID: userID), !state.confirmed else {
                throw IdentityError.failedPrecondition("no two-factor enrolment is waiting; call EnableTwoFactor first")
            }
            guard try await acceptTOTP(code, state: state, userID: userID, store: store) else { return nil }
            try await store.confirm(userID: userID)
            try await store.replaceBackupCodes(userID: userID, hashes: codes.compactMap(BackupCodes.hash))
            // Sessions opened without the second factor end; the caller's, which just gave it, goes on.
            try await SessionStore(database: transaction).revokeOthers(
                userID: userID, keeping: RaveID(context.caller?.sessionID ?? ""), reason: "two_factor")
            return ()
        }
    }

    func disableTwoFactor(
        _ request: IdentityV1.DisableTwoFactorRequest, context: RequestContext
    ) async throws -> IdentityV1.DisableTwoFactorResponse {
        let (userID, _) = try await dependencies.player(context)
        try await codeAttempt(userID: userID, context: context, failure: .invalidArgument(Self.wrongCode)) {
            try await dependencies.pool.transaction { transaction -> Void? in
                let store = TwoFactorStore(database: transaction, secrets: dependencies.secretKeys)
                guard let state = try await store.state(userID: userID), state.confirmed else {
                    throw IdentityError.failedPrecondition("two-factor is not enabled")
                }
                guard try await acceptSecondFactor(request.code, state: state, userID: userID, store: store) else {
                    return nil
                }
                try await store.disable(userID: userID)
                // A change of the account's protection ends every other session, as a password change does.
                try await SessionStore(database: transaction).revokeOthers(
                    userID: userID, keeping: RaveID(context.caller?.sessionID ?? ""), reason: "two_factor")
                return ()
            }
        }
        return .init()
    }

    func completeTwoFactorLogin(
        _ request: IdentityV1.CompleteTwoFactorLoginRequest, context: RequestContext
    ) async throws -> IdentityV1.LoginResponse {
        let challengeID = try Validation.raveID(request.challengeId, field: "challenge_id")
        guard
            let owner = try await TwoFactorStore(database: dependencies.pool, secrets: dependencies.secretKeys)
                .challenge(
                    challengeID)?.userID
        else {
            throw IdentityError.unauthenticated(Self.challengeGone)
        }
        // A player banned since the first factor is told so before a code is spent.
        try await dependencies.refuseIfBanned(owner)
        let response = try await codeAttempt(
            userID: owner, context: context, failure: .unauthenticated(Self.wrongCode)
        ) {
            try await completeChallenge(challengeID, code: request.code)
        }
        return try await dependencies.checkedAfterCommit(response)
    }

    /// Completes the challenge with `code` and logs in; nil when the code is wrong.
    private func completeChallenge(_ challengeID: RaveID, code: String) async throws -> IdentityV1.LoginResponse? {
        try await dependencies.pool.transaction { transaction in
            let store = TwoFactorStore(database: transaction, secrets: dependencies.secretKeys)
            guard let challenge = try await store.challenge(challengeID), challenge.isOpen,
                let state = try await store.state(userID: challenge.userID), state.confirmed
            else { throw IdentityError.unauthenticated(Self.challengeGone) }
            guard try await acceptSecondFactor(code, state: state, userID: challenge.userID, store: store)
            else { return nil }
            try await store.useChallenge(challengeID)
            // Cancelled before the merge, which a user being deleted takes no part in.
            let deletionCancelled = try await dependencies.deletions.cancelOnLogin(
                challenge.userID, database: transaction)
            var mergeID: RaveID? = nil
            if let source = challenge.mergeSource {
                mergeID = try await dependencies.mergeSaga.merge(
                    source: source, into: challenge.userID, appID: challenge.appID, in: transaction
                ).mergeID
            }
            var response = try await finishLogin(
                userID: challenge.userID, appID: challenge.appID, device: .init(deviceId: challenge.deviceID),
                created: false, explicit: true, in: transaction)
            response.mergeId = mergeID?.hex ?? ""
            response.deletionCancelled = response.deletionCancelled || deletionCancelled
            return response
        }
    }

    // MARK: - Login challenges

    /// Finishes a login, or, for a user with two-factor, returns a challenge instead of tokens; `mergeSource` (a
    /// signed-in guest) is merged into the user once the login is complete.
    func loginOrChallenge(
        userID: RaveID, appID: RaveID, device: IdentityV1.DeviceInfo, mergeSource: RaveID?,
        in transaction: PostgresTransaction
    ) async throws -> IdentityV1.LoginResponse {
        // Told only to whoever passed the first factor, so a ban says nothing to someone guessing passwords.
        try await dependencies.refuseIfBanned(userID, database: transaction)
        let store = TwoFactorStore(database: transaction, secrets: dependencies.secretKeys)
        if try await store.state(userID: userID)?.confirmed == true {
            let expiresAt = Date().addingTimeInterval(dependencies.configuration.twoFactorChallengeLifetime)
            let id = try await store.createChallenge(
                userID: userID, appID: appID, deviceID: device.deviceId, mergeSource: mergeSource,
                expiresAt: expiresAt)
            let user = try await UserStore(database: transaction).user(userID, appID: appID)
            return IdentityV1.LoginResponse(
                user: user.message,
                outcome: .twoFactorChallenge(.init(challengeId: id.hex, expiresAtUnixMs: expiresAt.unixMilliseconds)))
        }
        // Cancelled before the merge, which a user being deleted takes no part in.
        let deletionCancelled = try await dependencies.deletions.cancelOnLogin(userID, database: transaction)
        var mergeID: RaveID? = nil
        if let mergeSource {
            mergeID = try await dependencies.mergeSaga.merge(
                source: mergeSource, into: userID, appID: appID, in: transaction
            ).mergeID
        }
        var response = try await finishLogin(
            userID: userID, appID: appID, device: device, created: false, explicit: true, in: transaction)
        response.mergeId = mergeID?.hex ?? ""
        response.deletionCancelled = response.deletionCancelled || deletionCancelled
        return response
    }

    // MARK: - Codes

    static let wrongCode = "the code is wrong or was already used"
    static let challengeGone = "the two-factor challenge is unknown, used or expired; log in again"

    /// Accepts a TOTP code whose time step is later than the last accepted one, and records its step.
    private func acceptTOTP(
        _ code: String, state: TwoFactorState, userID: RaveID, store: TwoFactorStore
    ) async throws -> Bool {
        let totp = TOTP(secret: state.secret)
        guard
            let step = try Self.cryptoCall({ () throws(CryptoError) in
                try totp.verify(code, at: Date(), lastUsedStep: state.lastStep)
            })
        else { return false }
        return try await store.acceptStep(userID: userID, step: step)
    }

    /// Accepts a TOTP code or an unused backup code (which is then spent).
    func acceptSecondFactor(
        _ code: String, state: TwoFactorState, userID: RaveID, store: TwoFactorStore
    ) async throws -> Bool {
        if try await acceptTOTP(code, state: state, userID: userID, store: store) { return true }
        let stored = try await store.unusedBackupCodes(userID: userID)
        guard let index = BackupCodes.matchingIndex(of: code, in: stored) else { return false }
        return try await store.useBackupCode(userID: userID, hash: stored[index])
    }

    /// Checks and spends `code` (TOTP or backup) of `userID`'s confirmed two-factor in `transaction`: false when it is
    /// wrong, ABORTED when two-factor was switched off meanwhile (the caller read it on).
    func spendSecondFactor(_ code: String, userID: RaveID, in transaction: PostgresTransaction) async throws -> Bool {
        let store = TwoFactorStore(database: transaction, secrets: dependencies.secretKeys)
        guard let state = try await store.state(userID: userID), state.confirmed else {
            throw IdentityError.aborted("two-factor changed meanwhile; retry")
        }
        return try await acceptSecondFactor(code, state: state, userID: userID, store: store)
    }

    /// Runs `check` as a throttled code attempt of `userID` (`LoginThrottle.attempt`): nil from `check` (a wrong
    /// code) throws `failure`.
    func codeAttempt<Result>(
        userID: RaveID, context: RequestContext, failure: IdentityError, _ check: () async throws -> Result?
    ) async throws -> Result {
        let result = try await dependencies.loginThrottle.attempt(
            .twoFactor, account: userID.hex, address: context.metadata["rave-client-address"], check)
        guard let result else { throw failure }
        return result
    }

    /// Runs a Crypto/ call, turning its error into INTERNAL (they fail only when OpenSSL does).
    static func cryptoCall<T>(_ body: () throws(CryptoError) -> T) throws(IdentityError) -> T {
        do {
            return try body()
        } catch {
            throw .internalError("two-factor crypto failed: \(error.message)")
        }
    }
}
