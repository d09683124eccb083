import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Changing the password of a signed-in player (docs/identity.md, "Changing the password").
extension PlayerHandlers {
    /// How long after a change a retry of it (the same current and new password) is answered as the change itself.
    static let passwordChangeRetryWindow: TimeInterval = 600

    /// What the current password given to ChangePassword turned out to be.
    private enum CurrentPassword {
        /// The stored password: change it.
        case matches
        /// The password an earlier change replaced, recently, and the new one is already stored: that change is
        /// being retried.
        case alreadyChanged
    }

    func changePassword(
        _ request: IdentityV1.ChangePasswordRequest, context: RequestContext
    ) async throws -> IdentityV1.ChangePasswordResponse {
        let (userID, _) = try await dependencies.player(context)
        let current = try Validation.text(request.currentPassword, field: "current_password", maximum: 128)
        let new = try Validation.password(request.newPassword, field: "new_password")
        guard current != new else {
            throw IdentityError.invalidArgument("new_password must differ from the current password")
        }
        let credentials = CredentialStore(database: dependencies.pool)
        guard let stored = try await credentials.password(userID: userID) else {
            throw IdentityError.failedPrecondition(
                "this account has no password to change; add one with SignUp while signed in")
        }
        let twoFactor =
            try await TwoFactorStore(database: dependencies.pool, secrets: dependencies.secretKeys)
            .state(userID: userID)?.confirmed == true
        if twoFactor, request.twoFactorCode.isEmpty {
            throw IdentityError.invalidArgument("two_factor_code is required: this account uses two-factor")
        }
        let now = dependencies.clock()
        let retryPossible =
            stored.previousHash != nil
            && stored.changedAt.map { now.timeIntervalSince($0) < Self.passwordChangeRetryWindow } == true
        return try await dependencies.passwordHashers.withSlot { hashing in
            // A wrong current password counts as a failed login of the account (its email, as a login's does).
            let checked = try await dependencies.loginThrottle.attempt(
                .password, account: stored.email.lowercased(), address: context.metadata["rave-client-address"]
            ) { () async throws -> CurrentPassword? in
                if try await hashing.verify(current, against: stored.hash) { return .matches }
                guard retryPossible, let previous = stored.previousHash,
                    try await hashing.verify(new, against: stored.hash),
                    try await hashing.verify(current, against: previous)
                else { return nil }
                return .alreadyChanged
            }
            switch checked {
            case nil: throw IdentityError.invalidArgument("current_password is wrong")
            case .alreadyChanged: return IdentityV1.ChangePasswordResponse(revokedSessions: 0)
            case .matches: break
            }
            let hash = try await hashing.hash(new)
            let change = { () async throws -> Int? in
                try await self.replacePassword(
                    userID: userID, stored: stored, hash: hash, code: twoFactor ? request.twoFactorCode : nil,
                    now: now, keeping: RaveID(context.caller?.sessionID ?? ""))
            }
            let ended: Int?
            if twoFactor {
                ended = try await codeAttempt(
                    userID: userID, context: context, failure: .invalidArgument(Self.wrongCode)
                ) {
                    try await change()
                }
            } else {
                ended = try await change()
            }
            return IdentityV1.ChangePasswordResponse(revokedSessions: UInt32(clamping: ended ?? 0))
        }
    }

    /// Whether `password` is the account's current one (`stored`), checked on the hashing pool and charged to the
    /// login throttle like a failed login of the account (its login email, as a login's is).
    func currentPasswordMatches(
        _ password: String, stored: CredentialStore.StoredPassword, context: RequestContext
    ) async throws -> Bool {
        try await dependencies.passwordHashers.withSlot { hashing in
            try await dependencies.loginThrottle.attempt(
                .password, account: stored.email.lowercased(), address: context.metadata["rave-client-address"]
            ) { () async throws -> Bool? in
                try await hashing.verify(password, against: stored.hash) ? true : nil
            }
        } == true
    }

    /// Stores the new hash and ends every other session, in one transaction, after spending the two-factor `code`
    /// when one is needed; the number of sessions ended, or nil when the code is wrong (nothing changed then).
    private func replacePassword(
        userID: RaveID, stored: CredentialStore.StoredPassword, hash: String, code: String?, now: Date,
        keeping sessionID: RaveID?
    ) async throws -> Int? {
        try await dependencies.pool.transaction { transaction in
            if let code {
                guard try await spendSecondFactor(code, userID: userID, in: transaction) else { return nil }
            }
            guard
                try await CredentialStore(database: transaction).changePassword(
                    userID: userID, replacing: stored.hash, with: hash, at: now)
            else { throw IdentityError.aborted("the password changed meanwhile; retry") }
            return try await SessionStore(database: transaction).revokeOthers(
                userID: userID, keeping: sessionID, reason: "password")
        }
    }
}
