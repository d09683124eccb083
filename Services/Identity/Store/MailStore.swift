import Foundation
import RavePostgres

/// How many mails are asked for per key (`mail_limits`), the applications' mail templates (`mail_templates`), and
/// what a proven address changes on the account (migration 0012).
struct MailStore: Sendable {
    let database: any PostgresQueryable

    /// Counts one request in the key's current window (a window starts with the first request after the previous
    /// one ended) and returns the count and when the window ends.
    static let charge = PostgresStatement(
        name: "identity_mail_limit_charge",
        sql: """
            INSERT INTO mail_limits AS l (key, window_started_at, count) VALUES ($1, $2, 1)
            ON CONFLICT (key) DO UPDATE SET
                count = CASE WHEN l.window_started_at <= $2 - $3 * interval '1 second' THEN 1 ELSE l.count + 1 END,
                window_started_at = CASE WHEN l.window_started_at <= $2 - $3 * interval '1 second' THEN $2
                    ELSE l.window_started_at END
            RETURNING count, extract(epoch FROM window_started_at + $3 * interval '1 second' - $2)::int8 AS remaining
            """)
    static let sweepLimits = PostgresStatement(
        name: "identity_mail_limit_sweep",
        sql: "DELETE FROM mail_limits WHERE window_started_at < $1 - interval '1 day'")
    static let template = PostgresStatement(
        name: "identity_mail_template",
        sql: """
            SELECT subject, body FROM mail_templates WHERE app_id = $1 AND kind = $2 AND language = ANY($3::text[])
            ORDER BY array_position($3::text[], language) LIMIT 1
            """)
    static let setTemplate = PostgresStatement(
        name: "identity_mail_template_set",
        sql: """
            INSERT INTO mail_templates (app_id, kind, language, subject, body) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (app_id, kind, language) DO UPDATE SET subject = EXCLUDED.subject, body = EXCLUDED.body,
                updated_at = now()
            """)
    static let removeTemplate = PostgresStatement(
        name: "identity_mail_template_remove",
        sql: "DELETE FROM mail_templates WHERE app_id = $1 AND kind = $2 AND language = $3")
    /// Makes `$2` the account's verified email, unless another account holds it verified (then nothing changes).
    static let markVerified = PostgresStatement(
        name: "identity_mark_email_verified",
        sql: """
            UPDATE users SET email = $2, email_verified = true WHERE id = $1
              AND NOT EXISTS (SELECT 1 FROM users o WHERE lower(o.email) = lower($2) AND o.email_verified AND o.id <> $1)
            """)
    static let setLoginEmail = PostgresStatement(
        name: "identity_set_login_email",
        sql: "UPDATE password_credentials SET email = $2 WHERE user_id = $1")
    /// A reset code was mailed to the login email it names: once that changes, the code goes.
    static let dropResetCode = PostgresStatement(
        name: "identity_drop_reset_code", sql: "DELETE FROM email_codes WHERE user_id = $1 AND purpose = 'reset'")
    static let loginEmailHolder = PostgresStatement(
        name: "identity_login_email_holder",
        sql: "SELECT user_id FROM password_credentials WHERE lower(email) = lower($1)")

    /// Counts a request under `key`; the seconds until it may ask again when that exceeds `limit` per `window`.
    func charge(key: String, limit: Int, window: TimeInterval, now: Date) async throws -> Int? {
        guard let row = try await database.execute(Self.charge, [key, now, Int64(window)]).first else { return nil }
        let count = try row.decode(Int32.self, column: "count")
        guard count > limit else { return nil }
        return max(1, Int(try row.decode(Int64.self, column: "remaining")))
    }

    /// Deletes counters whose window ended more than a day before `now`.
    func sweep(now: Date) async throws -> Int {
        try await database.execute(Self.sweepLimits, [now]).affectedRowCount
    }

    /// The application's template of `kind` in the first of `languages` it has.
    func template(appID: RaveID, kind: String, languages: [String]) async throws -> (subject: String, body: String)? {
        guard let row = try await database.execute(Self.template, [appID, kind, languages]).first else { return nil }
        return (try row.decode(column: "subject"), try row.decode(column: "body"))
    }

    /// Sets a template, or removes it when `text` is nil.
    func setTemplate(
        appID: RaveID, kind: String, language: String, text: (subject: String, body: String)?
    ) async throws {
        if let text {
            _ = try await database.execute(Self.setTemplate, [appID, kind, language, text.subject, text.body])
        } else {
            _ = try await database.execute(Self.removeTemplate, [appID, kind, language])
        }
    }

    /// Makes `email` the verified email of `userID` (and, with `loginEmail`, its login email, ending a pending reset
    /// code mailed to the old one); ALREADY_EXISTS when another account holds it verified or logs in with it.
    func markVerified(userID: RaveID, email: String, loginEmail: Bool) async throws {
        if loginEmail {
            if let holder = try await database.execute(Self.loginEmailHolder, [email]).first,
                try holder.decode(RaveID.self, column: "user_id") != userID
            {
                throw IdentityError.alreadyExists("another account logs in with \(email)")
            }
            _ = try await database.execute(Self.setLoginEmail, [userID, email])
            _ = try await database.execute(Self.dropResetCode, [userID])
        }
        guard try await database.execute(Self.markVerified, [userID, email]).affectedRowCount == 1 else {
            throw IdentityError.alreadyExists("another account has already verified \(email)")
        }
    }

    /// Whether another account than `userID` logs in with `email`.
    func loginEmailTaken(_ email: String, by userID: RaveID) async throws -> Bool {
        guard let row = try await database.execute(Self.loginEmailHolder, [email]).first else { return false }
        return try row.decode(RaveID.self, column: "user_id") != userID
    }
}
