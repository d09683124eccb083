import Foundation
import RavePostgres
import RaveRPC

/// The statements that erase a deleted account's data from every identity table, in the deletion's transaction
/// (docs/identity.md, "Deleting an account", says what each table keeps and why).
///
/// The statements take `$1` the ids erased (the user and every id merged into it); those of keyed rows take `$1`
/// their emails (lower case: profile, login, provider and code emails, as the throttle and mail counters key them)
/// and `$2` the ids as 32 hex digits (as outbox, throttle and mail keys spell them).
struct AccountErasureStore: Sendable {
    let database: any PostgresQueryable

    /// Every identity table with a column that can name a user, and that column: what a check for leftovers reads
    /// (`keptColumns` keep the id by design).
    static let userColumns: [(table: String, column: String)] = [
        ("users", "id"), ("users", "merged_into"), ("user_app_profiles", "user_id"),
        ("password_credentials", "user_id"), ("provider_links", "user_id"), ("devices", "user_id"),
        ("device_logins", "user_id"), ("app_users", "user_id"), ("sessions", "user_id"),
        ("merged_identities", "source_user_id"), ("merged_identities", "target_user_id"),
        ("merges", "source_user_id"), ("merges", "target_user_id"), ("app_data_keys", "user_id"),
        ("app_data_key_candidates", "user_id"), ("two_factor", "user_id"), ("two_factor_backup_codes", "user_id"),
        ("two_factor_challenges", "user_id"), ("two_factor_challenges", "merge_source_user_id"),
        ("merge_notices", "user_id"), ("user_bans", "user_id"), ("audit_events", "target_user_id"),
        ("email_codes", "user_id"), ("account_deletions", "user_id"), ("account_exports", "user_id"),
    ]

    /// The columns that keep a deleted user's id: the bare `users` row, the audit log and the deletion's record.
    static let keptColumns: Set<String> = ["users.id", "audit_events.target_user_id", "account_deletions.user_id"]

    /// Locks the user and every id merged into it (`FOR UPDATE`, in id order, as merges and bans lock users), so
    /// no merge, ban or guest login of these ids runs beside the erasure; returns the merged ids.
    static let lockUsers = PostgresStatement(
        name: "identity_erasure_lock_users",
        sql: "SELECT id FROM users WHERE id = $1 OR merged_into = $1 ORDER BY id FOR UPDATE")
    static let selectUser = PostgresStatement(
        name: "identity_erasure_select_user", sql: "SELECT 1 FROM users WHERE id = $1")
    static let selectEmails = PostgresStatement(
        name: "identity_erasure_emails",
        sql: """
            SELECT coalesce(array_agg(DISTINCT lower(email)), '{}') AS emails FROM (
                SELECT email FROM users WHERE id = ANY($1)
                UNION ALL SELECT email FROM password_credentials WHERE user_id = ANY($1)
                UNION ALL SELECT email FROM provider_links WHERE user_id = ANY($1)
                UNION ALL SELECT email FROM email_codes WHERE user_id = ANY($1)
            ) AS found WHERE email IS NOT NULL
            """)
    /// Ends every live session (on the revocation feed, so gateways refuse their access tokens at once).
    static let revokeSessions = PostgresStatement(
        name: "identity_erasure_revoke_sessions",
        sql: """
            WITH ended AS (
                UPDATE sessions SET revoked_at = now(), revoked_reason = 'deletion'
                WHERE user_id = ANY($1) AND revoked_at IS NULL RETURNING id
            ), \(SessionStore.revocationFeed)
            SELECT count(*) AS ended FROM ended
            """)
    /// In order (children before the rows they reference), each with `$1` the ids; each names why it erases
    /// rather than keeps.
    static let eraseStatements: [PostgresStatement] = [
        // Sessions name the devices; their ended ids stay on the revocation feed, which names no user.
        PostgresStatement(
            name: "identity_erasure_refresh_tokens",
            sql: "DELETE FROM refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE user_id = ANY($1))"),
        PostgresStatement(name: "identity_erasure_sessions", sql: "DELETE FROM sessions WHERE user_id = ANY($1)"),
        // App data keys are the user's (or a merged user's) ids.
        PostgresStatement(
            name: "identity_erasure_key_candidates", sql: "DELETE FROM app_data_key_candidates WHERE user_id = ANY($1)"),
        PostgresStatement(name: "identity_erasure_keys", sql: "DELETE FROM app_data_keys WHERE user_id = ANY($1)"),
        PostgresStatement(
            name: "identity_erasure_app_profiles", sql: "DELETE FROM user_app_profiles WHERE user_id = ANY($1)"),
        PostgresStatement(
            name: "identity_erasure_passwords", sql: "DELETE FROM password_credentials WHERE user_id = ANY($1)"),
        PostgresStatement(name: "identity_erasure_links", sql: "DELETE FROM provider_links WHERE user_id = ANY($1)"),
        PostgresStatement(name: "identity_erasure_devices", sql: "DELETE FROM devices WHERE user_id = ANY($1)"),
        // A device of the user plays as a new guest afterwards.
        PostgresStatement(
            name: "identity_erasure_device_logins", sql: "DELETE FROM device_logins WHERE user_id = ANY($1)"),
        PostgresStatement(name: "identity_erasure_app_users", sql: "DELETE FROM app_users WHERE user_id = ANY($1)"),
        PostgresStatement(
            name: "identity_erasure_backup_codes", sql: "DELETE FROM two_factor_backup_codes WHERE user_id = ANY($1)"),
        PostgresStatement(name: "identity_erasure_two_factor", sql: "DELETE FROM two_factor WHERE user_id = ANY($1)"),
        // A challenge that would merge the user into someone else ends too (that login starts again).
        PostgresStatement(
            name: "identity_erasure_challenges",
            sql: "DELETE FROM two_factor_challenges WHERE user_id = ANY($1) OR merge_source_user_id = ANY($1)"),
        PostgresStatement(name: "identity_erasure_email_codes", sql: "DELETE FROM email_codes WHERE user_id = ANY($1)"),
        // The ban's history stays in the audit log; a deleted account cannot log in anyway.
        PostgresStatement(name: "identity_erasure_bans", sql: "DELETE FROM user_bans WHERE user_id = ANY($1)"),
        PostgresStatement(
            name: "identity_erasure_merged_identities",
            sql: "DELETE FROM merged_identities WHERE source_user_id = ANY($1) OR target_user_id = ANY($1)"),
        PostgresStatement(
            name: "identity_erasure_merge_participants",
            sql: """
                DELETE FROM merge_participants WHERE merge_id IN (
                    SELECT id FROM merges WHERE source_user_id = ANY($1) OR target_user_id = ANY($1))
                """),
        PostgresStatement(
            name: "identity_erasure_merges",
            sql: "DELETE FROM merges WHERE source_user_id = ANY($1) OR target_user_id = ANY($1)"),
        PostgresStatement(
            name: "identity_erasure_merge_notices", sql: "DELETE FROM merge_notices WHERE user_id = ANY($1)"),
        // Exports hold everything about the user: the archives and their records go.
        PostgresStatement(
            name: "identity_erasure_export_chunks",
            sql: """
                DELETE FROM account_export_chunks WHERE export_id IN (
                    SELECT id FROM account_exports WHERE user_id = ANY($1))
                """),
        PostgresStatement(
            name: "identity_erasure_exports", sql: "DELETE FROM account_exports WHERE user_id = ANY($1)"),
        // The row stays as a bare id marked deleted, so the id is never handed out again and nothing acts as it.
        PostgresStatement(
            name: "identity_erasure_users",
            sql: """
                UPDATE users SET username = NULL, display_name = NULL, picture_url = NULL, email = NULL,
                    email_verified = false, birth_date = NULL, birth_year = NULL, gender = NULL, country = NULL,
                    newsletter_opt_in = false, merged_into = NULL, deleted_at = now(), updated_at = now()
                WHERE id = ANY($1)
                """),
    ]

    /// Rows keyed by text that names the account, with `$1` the emails, `$2` the hex ids and `$3` the ids (the
    /// previous release's counters spelled them as uuid text).
    static let keyedStatements: [PostgresStatement] = [
        // Counters keyed by the account (its email or id); those keyed by a client address alone stay.
        PostgresStatement(
            name: "identity_erasure_login_throttle",
            sql: """
                DELETE FROM login_throttle WHERE key IN (
                        SELECT 'password:account:' || email FROM unnest($1::text[]) AS e (email)
                        UNION ALL SELECT '2fa:account:' || hex FROM unnest($2::text[]) AS h (hex))
                    OR (key LIKE 'password:pair:%' AND substr(key, strpos(key, ' ') + 1) = ANY($1))
                    OR (key LIKE '2fa:pair:%' AND substr(key, strpos(key, ' ') + 1) = ANY($2))
                """),
        PostgresStatement(
            name: "identity_erasure_login_attempts",
            sql:
                "DELETE FROM login_attempts WHERE key IN (SELECT 'account:' || id::text FROM unnest($3::uuid[]) AS u (id))"
        ),
        PostgresStatement(
            name: "identity_erasure_mail_limits",
            sql: """
                DELETE FROM mail_limits WHERE key IN (
                    SELECT 'verify:' || hex FROM unnest($2::text[]) AS h (hex)
                    UNION ALL SELECT 'reset:email:' || email FROM unnest($1::text[]) AS e (email))
                """),
        // Mails to the user (sealed, but they carry the address) and provider-link events, delivered or not: a
        // deleted account is mailed nothing and gives nobody a gift.
        PostgresStatement(
            name: "identity_erasure_outbox",
            sql: """
                DELETE FROM outbox_events WHERE key IN (
                    SELECT hex FROM unnest($2::text[]) AS h (hex)
                    UNION ALL SELECT 'mail:' || hex FROM unnest($2::text[]) AS h (hex))
                """),
    ]

    /// Locks `userID` and the ids merged into it; the merged ids, or nil when the user does not exist.
    func lock(_ userID: RaveID) async throws -> [RaveID]? {
        let ids = try await database.execute(Self.lockUsers, [userID]).map { try $0.decode(RaveID.self, column: "id") }
        guard ids.contains(userID) else { return nil }
        return ids.filter { $0 != userID }
    }

    /// Whether `id` is a user's id (live, merged or deleted).
    func isUser(_ id: RaveID) async throws -> Bool {
        try await !database.execute(Self.selectUser, [id]).isEmpty
    }

    /// Erases every identity row of `ids` (the user and its merged ids); returns the sessions it ended.
    @discardableResult
    func erase(_ ids: [RaveID]) async throws -> Int {
        let emails = try await database.execute(Self.selectEmails, [ids]).first?.decode([String].self, column: "emails")
        let ended = try await database.execute(Self.revokeSessions, [ids]).first?.decode(Int64.self, column: "ended")
        // Parameters are sent with their types, so a statement may leave some unused.
        let keys: [(any PostgresEncodable)?] = [emails ?? [], ids.map(\.hex), ids]
        for statement in Self.keyedStatements {
            _ = try await database.execute(statement, keys)
        }
        for statement in Self.eraseStatements {
            _ = try await database.execute(statement, [ids])
        }
        return Int(ended ?? 0)
    }
}
