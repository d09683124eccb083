import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// TOTP two-factor (RFC 6238: SHA-1, 6 digits, 30 s, ±1 step): enrolment, backup codes and login challenges.
///
/// Wrong codes count against the account and the client address with the password login's lockouts, under
/// their own keys ("2fa:…"), so guessing codes cannot be spread over logins.
extension PlayerHandlers {
    func enableTwoFactor(
        _ request: IdentityV1.EnableTwoFactorRequest, context: RequestContext
    ) async throws -> IdentityV1.EnableTwoFactorResponse {
        let (userID, appID) = try await service.player(context)
        let application = try await service.applications.application(appID)
        guard application.settings.twoFactorAllowed else {
            throw RPCError.failedPrecondition("this app does not offer two-factor authentication")
        }
        let user = try await UserStore(database: service.pool).user(userID, appID: appID)
        guard user.accountState == .authenticated else {
            throw RPCError.failedPrecondition("two-factor needs a password or a provider login first")
        }
        let totp = try Self.cryptoCall { () throws(CryptoError) in try TOTP.generate() }
        guard
            try await TwoFactorStore(database: service.pool, secrets: service.secretKeys).begin(
                userID: userID, secret: totp.secret)
        else {
            throw RPCError.failedPrecondition("two-factor is already enabled; disable it first to enrol again")
        }
        let account = user.username ?? user.email ?? userID.hex
        return .init(
            secret: totp.base32Secret,
            otpauthUrl: totp.provisioningURL(issuer: service.configuration.twoFactorIssuer, account: account))
    }

    func confirmTwoFactor(
        _ request: IdentityV1.ConfirmTwoFactorRequest, context: RequestContext
    ) async throws -> IdentityV1.ConfirmTwoFactorResponse {
        let (userID, _) = try await service.player(context)
        let keys = rateLimitKeys(userID: userID, context: context)
        try await checkNotLockedOut(keys)
        let codes = try Self.cryptoCall { () throws(CryptoError) in try BackupCodes.generate() }
        let accepted: Bool = try await service.pool.transaction { transaction in
            let store = TwoFactorStore(database: transaction, secrets: service.secretKeys)
            guard let state = try await store.state(userID: userID), !state.confirmed else {
                throw RPCError.failedPrecondition("no two-factor enrolment is waiting; call EnableTwoFactor first")
            }
            guard try await acceptTOTP(request.code, state: state, userID: userID, store: store) else { return false }
            try await store.confirm(userID: userID)
            try await store.replaceBackupCodes(userID: userID, hashes: codes.compactMap(BackupCodes.hash))
            // Sessions opened without the second factor end; the caller's, which just gave it, goes on.
            try await SessionStore(database: transaction).revokeOthers(
                userID: userID, keeping: RaveID(context.caller?.sessionID ?? ""), reason: "two_factor")
            return true
        }
        try await settleAttempt(accepted: accepted, keys: keys, failure: .invalidArgument(Self.wrongCode))
        return .init(backupCodes: codes)
    }

    func disableTwoFactor(
        _ request: IdentityV1.DisableTwoFactorRequest, context: RequestContext
    ) async throws -> IdentityV1.DisableTwoFactorResponse {
        let (userID, _) = try await service.player(context)
        let keys = rateLimitKeys(userID: userID, context: context)
        try await checkNotLockedOut(keys)
        let accepted: Bool = try await service.pool.transaction { transaction in
            let store = TwoFactorStore(database: transaction, secrets: service.secretKeys)
            guard let state = try await store.state(userID: userID), state.confirmed else {
                throw RPCError.failedPrecondition("two-factor is not enabled")
            }
            guard try await acceptSecondFactor(request.code, state: state, userID: userID, store: store) else {
                return false
            }
            try await store.disable(userID: userID)
            // A change of the account's protection ends every other session, as a password change does.
            try await SessionStore(database: transaction).revokeOthers(
                userID: userID, keeping: RaveID(context.caller?.sessionID ?? ""), reason: "two_factor")
            return true
        }
        try await settleAttempt(accepted: accepted, keys: keys, failure: .invalidArgument(Self.wrongCode))
        return .init()
    }

    func completeTwoFactorLogin(
        _ request: IdentityV1.CompleteTwoFactorLoginRequest, context: RequestContext
    ) async throws -> IdentityV1.LoginResponse {
        let challengeID = try Validation.raveID(request.challengeId, field: "challenge_id")
        guard
            let owner = try await TwoFactorStore(database: service.pool, secrets: service.secretKeys).challenge(
                challengeID)?.userID
        else {
            throw RPCError.unauthenticated(Self.challengeGone)
        }
        let keys = rateLimitKeys(userID: owner, context: context)
        try await checkNotLockedOut(keys)
        let response: IdentityV1.LoginResponse? = try await service.pool.transaction { transaction in
            let store = TwoFactorStore(database: transaction, secrets: service.secretKeys)
            guard let challenge = try await store.challenge(challengeID), challenge.isOpen,
                let state = try await store.state(userID: challenge.userID), state.confirmed
            else { throw RPCError.unauthenticated(Self.challengeGone) }
            guard try await acceptSecondFactor(request.code, state: state, userID: challenge.userID, store: store)
            else { return nil }
            try await store.useChallenge(challengeID)
            var mergeID: RaveID? = nil
            if let source = challenge.mergeSource {
                mergeID = try await service.mergeSaga.merge(
                    source: source, into: challenge.userID, appID: challenge.appID, in: transaction
                ).mergeID
            }
            var response = try await finishLogin(
                userID: challenge.userID, appID: challenge.appID, device: .init(deviceId: challenge.deviceID),
                created: false, explicit: true, in: transaction)
            response.mergeId = mergeID?.hex ?? ""
            return response
        }
        try await settleAttempt(accepted: response != nil, keys: keys, failure: .unauthenticated(Self.wrongCode))
        guard let response else { throw RPCError.unauthenticated(Self.wrongCode) }
        return response
    }

    // MARK: - Login challenges

    /// Finishes a login, or, for a user with two-factor, returns a challenge instead of tokens; `mergeSource` (a
    /// signed-in guest) is merged into the user once the login is complete.
    func loginOrChallenge(
        userID: RaveID, appID: RaveID, device: IdentityV1.DeviceInfo, mergeSource: RaveID?,
        in transaction: PostgresTransaction
    ) async throws -> IdentityV1.LoginResponse {
        let store = TwoFactorStore(database: transaction, secrets: service.secretKeys)
        if try await store.state(userID: userID)?.confirmed == true {
            let expiresAt = Date().addingTimeInterval(service.configuration.twoFactorChallengeLifetime)
            let id = try await store.createChallenge(
                userID: userID, appID: appID, deviceID: device.deviceId, mergeSource: mergeSource,
                expiresAt: expiresAt)
            let user = try await UserStore(database: transaction).user(userID, appID: appID)
            return IdentityV1.LoginResponse(
                user: user.message,
                outcome: .twoFactorChallenge(.init(challengeId: id.hex, expiresAtUnixMs: expiresAt.unixMilliseconds)))
        }
        var mergeID: RaveID? = nil
        if let mergeSource {
            mergeID = try await service.mergeSaga.merge(
                source: mergeSource, into: userID, appID: appID, in: transaction
            ).mergeID
        }
        var response = try await finishLogin(
            userID: userID, appID: appID, device: device, created: false, explicit: true, in: transaction)
        response.mergeId = mergeID?.hex ?? ""
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
    private func acceptSecondFactor(
        _ code: String, state: TwoFactorState, userID: RaveID, store: TwoFactorStore
    ) async throws -> Bool {
        if try await acceptTOTP(code, state: state, userID: userID, store: store) { return true }
        let stored = try await store.unusedBackupCodes(userID: userID)
        guard let index = BackupCodes.matchingIndex(of: code, in: stored) else { return false }
        return try await store.useBackupCode(userID: userID, hash: stored[index])
    }

    private func rateLimitKeys(userID: RaveID, context: RequestContext) -> [String] {
        var keys = ["2fa:account:" + userID.hex]
        if let address = context.metadata["rave-client-address"], !address.isEmpty {
            keys.append("2fa:address:" + address)
        }
        return keys
    }

    private func checkNotLockedOut(_ keys: [String]) async throws {
        if let until = try await CredentialStore(database: service.pool).lockedUntil(keys: keys) {
            let seconds = max(1, Int(until.timeIntervalSinceNow.rounded(.up)))
            throw RPCError.resourceExhausted("too many wrong codes; try again in \(seconds) s")
        }
    }

    /// Counts a wrong code (after its transaction, so the count survives the failure) or clears the account's count.
    private func settleAttempt(accepted: Bool, keys: [String], failure: RPCError) async throws {
        let credentials = CredentialStore(database: service.pool)
        guard accepted else {
            try await credentials.recordFailure(keys: keys, configuration: service.configuration)
            throw failure
        }
        try await credentials.clearFailures(key: keys[0])
    }

    /// Runs a Crypto/ call, turning its error into INTERNAL (they fail only when OpenSSL does).
    static func cryptoCall<T>(_ body: () throws(CryptoError) -> T) throws(RPCError) -> T {
        do {
            return try body()
        } catch {
            throw .internalError("two-factor crypto failed: \(error.message)")
        }
    }
}
