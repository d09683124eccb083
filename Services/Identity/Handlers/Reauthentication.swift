import Foundation
import RavePostgres
import RaveRPC

/// Re-authenticating the signed-in player before an act on the whole account: deleting it ("Deleting an account")
/// or exporting it ("Exporting an account"), both in docs/identity.md.
extension PlayerHandlers {
    /// Checks the caller again, then runs `act` in a transaction that also spends the two-factor code.
    ///
    /// An account with a password gives it (checked like ChangePassword's current password, through the hashing
    /// slots and the login throttle); one without (a guest, or provider logins only) must call from a session that
    /// logged in within the last 5 minutes. With two-factor, a code is needed as well, spent in `act`'s
    /// transaction (a wrong one changes nothing). `purpose` completes "log in again to …".
    func reauthenticated<Result: Sendable>(
        userID: RaveID, currentPassword: String, twoFactorCode: String, purpose: String, context: RequestContext,
        _ act: @escaping @Sendable (PostgresTransaction) async throws -> Result
    ) async throws -> Result {
        let pool = dependencies.pool
        let twoFactor =
            try await TwoFactorStore(database: pool, secrets: dependencies.secretKeys).state(userID: userID)?
            .confirmed == true
        if twoFactor, twoFactorCode.isEmpty {
            throw IdentityError.invalidArgument("two_factor_code is required: this account uses two-factor")
        }
        if let stored = try await CredentialStore(database: pool).password(userID: userID) {
            guard !currentPassword.isEmpty else {
                throw IdentityError.invalidArgument("current_password is required: this account has a password")
            }
            let current = try Validation.text(currentPassword, field: "current_password", maximum: 128)
            guard try await currentPasswordMatches(current, stored: stored, context: context) else {
                throw IdentityError.invalidArgument("current_password is wrong")
            }
        } else {
            let seconds = AccountDeletions.recentLogin
            guard let sessionID = RaveID(context.caller?.sessionID ?? ""),
                try await SessionStore(database: pool).loggedInRecently(sessionID: sessionID, seconds: seconds)
            else {
                throw IdentityError.failedPrecondition(
                    "log in again to \(purpose): an account without a password must ask from a session "
                        + "that logged in within the last \(Int(seconds / 60)) minutes")
            }
        }
        let run = { () async throws -> Result? in
            try await pool.transaction { transaction in
                if twoFactor {
                    guard try await spendSecondFactor(twoFactorCode, userID: userID, in: transaction) else {
                        return nil
                    }
                }
                return try await act(transaction)
            }
        }
        let result =
            twoFactor
            ? try await codeAttempt(userID: userID, context: context, failure: .invalidArgument(Self.wrongCode)) {
                try await run()
            }
            : try await run()
        guard let result else { throw IdentityError.internalError("the account was not re-authenticated") }
        return result
    }
}
