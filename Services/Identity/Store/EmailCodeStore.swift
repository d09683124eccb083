import Foundation
import RavePostgres

/// The email codes of verification and password reset (`email_codes`, migration 0012): one live code per account
/// and purpose, stored as an HMAC only (`EmailCodes.hash`).
struct EmailCodeStore: Sendable {
    enum Purpose: String, Sendable {
        case verify
        case reset
    }

    /// A live code's row, as a check found it.
    struct Code: Sendable {
        var userID: RaveID
        var email: String
        var setsLoginEmail: Bool
        /// Whether the code given matched.
        var matches: Bool
    }

    let database: any PostgresQueryable

    static let replace = PostgresStatement(
        name: "identity_email_code_replace",
        sql: """
            INSERT INTO email_codes AS c (user_id, purpose, email, sets_login_email, code_hash, created_at, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (user_id, purpose) DO UPDATE SET email = EXCLUDED.email,
                sets_login_email = EXCLUDED.sets_login_email, code_hash = EXCLUDED.code_hash, attempts = 0,
                created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
            """)
    /// Checks a code and counts it when wrong, in one statement, so two concurrent guesses both count.
    ///
    /// A right code costs nothing. Only codes still alive (not expired, fewer than `$4` wrong) are checked.
    static let checkVerify = PostgresStatement(
        name: "identity_email_code_check_verify",
        sql: """
            UPDATE email_codes SET attempts = attempts + CASE WHEN code_hash = $2 THEN 0 ELSE 1 END
            WHERE user_id = $1 AND purpose = 'verify' AND expires_at > $3 AND attempts < $4
            RETURNING user_id, email, sets_login_email, code_hash = $2 AS matches
            """)
    static let checkReset = PostgresStatement(
        name: "identity_email_code_check_reset",
        sql: """
            UPDATE email_codes SET attempts = attempts + CASE WHEN code_hash = $2 THEN 0 ELSE 1 END
            WHERE lower(email) = lower($1) AND purpose = 'reset' AND expires_at > $3 AND attempts < $4
            RETURNING user_id, email, sets_login_email, code_hash = $2 AS matches
            """)
    static let consume = PostgresStatement(
        name: "identity_email_code_consume",
        sql: "DELETE FROM email_codes WHERE user_id = $1 AND purpose = $2 AND code_hash = $3 AND expires_at > $4")
    static let pending = PostgresStatement(
        name: "identity_email_code_pending",
        sql: """
            SELECT email, sets_login_email FROM email_codes WHERE user_id = $1 AND purpose = 'verify'
            """)
    static let sweepExpired = PostgresStatement(
        name: "identity_email_code_sweep", sql: "DELETE FROM email_codes WHERE expires_at < $1")

    /// Stores a new code for the account and purpose, replacing the previous one.
    func replace(
        userID: RaveID, purpose: Purpose, email: String, setsLoginEmail: Bool, hash: [UInt8], now: Date,
        lifetime: TimeInterval
    ) async throws {
        _ = try await database.execute(
            Self.replace,
            [
                userID, purpose.rawValue, email, setsLoginEmail, hash, now,
                now.addingTimeInterval(lifetime),
            ])
    }

    /// The live verification code of `userID`, checked against `hash`; nil when none is alive.
    func checkVerification(userID: RaveID, hash: [UInt8], now: Date, maximumAttempts: Int) async throws -> Code? {
        try await database.execute(
            Self.checkVerify, [userID, hash, now, Int32(maximumAttempts)]
        ).first.map(Self.code)
    }

    /// The live reset code for the login email `email`, checked against `hash`; nil when none is alive.
    func checkReset(email: String, hash: [UInt8], now: Date, maximumAttempts: Int) async throws -> Code? {
        try await database.execute(
            Self.checkReset, [email, hash, now, Int32(maximumAttempts)]
        ).first.map(Self.code)
    }

    /// Spends a code; false when it was spent (or replaced) meanwhile.
    func consume(userID: RaveID, purpose: Purpose, hash: [UInt8], now: Date) async throws -> Bool {
        try await database.execute(Self.consume, [userID, purpose.rawValue, hash, now])
            .affectedRowCount == 1
    }

    /// The address waiting for verification (whatever the state of its code), if any.
    func pendingVerification(userID: RaveID) async throws -> (email: String, setsLoginEmail: Bool)? {
        guard let row = try await database.execute(Self.pending, [userID]).first else { return nil }
        return (try row.decode(column: "email"), try row.decode(column: "sets_login_email"))
    }

    /// Deletes codes that expired before `now`.
    func sweep(now: Date) async throws -> Int {
        try await database.execute(Self.sweepExpired, [now]).affectedRowCount
    }

    private static func code(_ row: PostgresRow) throws -> Code {
        Code(
            userID: try row.decode(column: "user_id"), email: try row.decode(column: "email"),
            setsLoginEmail: try row.decode(column: "sets_login_email"), matches: try row.decode(column: "matches"))
    }
}
