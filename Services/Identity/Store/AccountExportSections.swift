import RavePostgres
import RaveRPC

/// Identity's own sections of an account export (docs/identity.md, "Exporting an account"): what identity holds
/// about the user and the ids merged into it, each row one JSON object built by PostgreSQL in the archive's
/// conventions (snake_case keys, ids as 32 lowercase hex digits, times RFC 3339 UTC with milliseconds).
///
/// No secret leaves: no password hash, refresh token, TOTP secret, backup code or email code is selected. Every
/// statement takes `$1` the user and its merged ids.
enum AccountExportSections {
    /// An id column as 32 lowercase hex digits.
    private static func id(_ column: String) -> String { "replace(\(column)::text, '-', '')" }
    /// A time column as RFC 3339 UTC with milliseconds.
    private static func time(_ column: String) -> String {
        "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    }

    /// The sections, in the order the archive lists them.
    static let statements: [(section: String, statement: PostgresStatement)] = [
        (
            "account",
            section(
                "account",
                """
                SELECT json_build_object('user_id', \(id("u.id")), 'username', u.username,
                    'display_name', u.display_name, 'picture_url', u.picture_url, 'birth_date', u.birth_date::text,
                    'birth_year', u.birth_year, 'gender', u.gender, 'country', u.country,
                    'newsletter_opt_in', u.newsletter_opt_in, 'merged_into', \(id("u.merged_into")),
                    'created_at', \(time("u.created_at")), 'updated_at', \(time("u.updated_at")))::text AS record
                FROM users u WHERE u.id = ANY($1) ORDER BY u.created_at, u.id
                """)
        ),
        (
            "app_profiles",
            section(
                "app_profiles",
                """
                SELECT json_build_object('user_id', \(id("p.user_id")), 'app_id', \(id("p.app_id")),
                    'display_name', p.display_name, 'picture_url', p.picture_url)::text AS record
                FROM user_app_profiles p WHERE p.user_id = ANY($1) ORDER BY p.user_id, p.app_id
                """)
        ),
        (
            "emails",
            section(
                "emails",
                """
                SELECT record FROM (
                    SELECT 1 AS kind, u.id AS user_id, json_build_object('user_id', \(id("u.id")), 'email', u.email,
                        'use', 'profile', 'verified', u.email_verified)::text AS record
                    FROM users u WHERE u.id = ANY($1) AND u.email IS NOT NULL
                    UNION ALL
                    SELECT 2, c.user_id, json_build_object('user_id', \(id("c.user_id")), 'email', c.email,
                        'use', 'password_login', 'created_at', \(time("c.created_at")),
                        'password_changed_at', \(time("c.changed_at")))::text
                    FROM password_credentials c WHERE c.user_id = ANY($1)
                ) AS found ORDER BY kind, user_id
                """)
        ),
        (
            "providers",
            section(
                "providers",
                """
                SELECT json_build_object('user_id', \(id("l.user_id")), 'provider', l.provider,
                    'subject', l.subject, 'email', l.email, 'created_at', \(time("l.created_at")))::text AS record
                FROM provider_links l WHERE l.user_id = ANY($1) ORDER BY l.created_at, l.provider
                """)
        ),
        (
            "applications",
            section(
                "applications",
                """
                SELECT json_build_object('user_id', \(id("a.user_id")), 'app_id', \(id("a.app_id")),
                    'first_seen_at', \(time("a.first_seen_at")))::text AS record
                FROM app_users a WHERE a.user_id = ANY($1) ORDER BY a.first_seen_at, a.app_id
                """)
        ),
        (
            "devices",
            section(
                "devices",
                """
                SELECT json_build_object('user_id', \(id("d.user_id")), 'device_id', d.device_id, 'name', d.name,
                    'platform', d.platform, 'first_seen_at', \(time("d.first_seen_at")),
                    'last_seen_at', \(time("d.last_seen_at")))::text AS record
                FROM devices d WHERE d.user_id = ANY($1) ORDER BY d.first_seen_at, d.device_id
                """)
        ),
        (
            "sessions",
            section(
                "sessions",
                """
                SELECT json_build_object('session_id', \(id("s.id")), 'user_id', \(id("s.user_id")),
                    'app_id', \(id("s.app_id")), 'device_id', s.device_id, 'created_at', \(time("s.created_at")),
                    'last_used_at', \(time("s.last_used_at")), 'expires_at', \(time("s.expires_at")),
                    'ended_at', \(time("s.revoked_at")), 'ended_reason', s.revoked_reason)::text AS record
                FROM sessions s WHERE s.user_id = ANY($1) ORDER BY s.created_at, s.id
                """)
        ),
        (
            "two_factor",
            section(
                "two_factor",
                """
                SELECT json_build_object('user_id', \(id("t.user_id")), 'enabled', t.confirmed_at IS NOT NULL,
                    'confirmed_at', \(time("t.confirmed_at")),
                    'backup_codes_left', (SELECT count(*) FROM two_factor_backup_codes b
                        WHERE b.user_id = t.user_id AND b.used_at IS NULL)::int)::text AS record
                FROM two_factor t WHERE t.user_id = ANY($1) ORDER BY t.user_id
                """)
        ),
        (
            "bans",
            section(
                "bans",
                """
                SELECT json_build_object('user_id', \(id("b.user_id")), 'reason', b.reason,
                    'banned_at', \(time("b.banned_at")), 'until', \(time("b.until_at")))::text AS record
                FROM user_bans b WHERE b.user_id = ANY($1) ORDER BY b.banned_at
                """)
        ),
        (
            "audit_events",
            section(
                "audit_events",
                """
                SELECT json_build_object('occurred_at', \(time("a.occurred_at")),
                    'user_id', \(id("a.target_user_id")), 'action', a.action, 'method', a.method,
                    'actor_kind', a.actor_kind, 'reason', a.reason)::text AS record
                FROM audit_events a WHERE a.target_user_id = ANY($1) ORDER BY a.id
                """)
        ),
        (
            "merges",
            section(
                "merges",
                """
                SELECT json_build_object('merge_id', \(id("m.merge_id")),
                    'source_user_id', \(id("m.source_user_id")), 'target_user_id', \(id("m.target_user_id")),
                    'merged_at', \(time("m.merged_at")))::text AS record
                FROM merged_identities m WHERE m.source_user_id = ANY($1) OR m.target_user_id = ANY($1)
                ORDER BY m.merged_at, m.source_user_id
                """)
        ),
        (
            "app_data_keys",
            section(
                "app_data_keys",
                """
                SELECT json_build_object('user_id', \(id("k.user_id")), 'app_id', \(id("k.app_id")),
                    'selected_key', k.selected_key,
                    'candidates', coalesce((SELECT json_agg(c.key ORDER BY c.key) FROM app_data_key_candidates c
                        WHERE c.user_id = k.user_id AND c.app_id = k.app_id), '[]'::json))::text AS record
                FROM app_data_keys k WHERE k.user_id = ANY($1) ORDER BY k.user_id, k.app_id
                """)
        ),
        (
            "account_deletions",
            section(
                "account_deletions",
                """
                SELECT json_build_object('deletion_id', \(id("d.id")), 'user_id', \(id("d.user_id")),
                    'status', d.status, 'requested_by', d.requested_by, 'requested_at', \(time("d.requested_at")),
                    'due_at', \(time("d.due_at")), 'cancelled_at', \(time("d.cancelled_at")),
                    'cancelled_by', d.cancelled_by)::text AS record
                FROM account_deletions d WHERE d.user_id = ANY($1) ORDER BY d.seq
                """)
        ),
        (
            "exports",
            section(
                "exports",
                """
                SELECT json_build_object('export_id', \(id("e.id")), 'user_id', \(id("e.user_id")),
                    'status', e.status, 'requested_by', e.requested_by, 'created_at', \(time("e.created_at")),
                    'ready_at', \(time("e.ready_at")), 'expires_at', \(time("e.expires_at")))::text AS record
                FROM account_exports e WHERE e.user_id = ANY($1) ORDER BY e.created_at
                """)
        ),
    ]

    private static func section(_ name: String, _ sql: String) -> PostgresStatement {
        PostgresStatement(name: "identity_export_section_\(name)", sql: sql)
    }

    /// The ids merged into `userID` (their merges were re-pointed at it, so one step finds them all).
    static let mergedIDs = PostgresStatement(
        name: "identity_export_merged_ids",
        sql: "SELECT source_user_id FROM merged_identities WHERE target_user_id = $1 ORDER BY merged_at, source_user_id"
    )

    /// Each section with its records (JSON objects, UTF-8), for the user and `mergedIDs`.
    static func sections(
        userID: RaveID, mergedIDs: [RaveID], database: any PostgresQueryable
    ) async throws -> [(name: String, records: [String])] {
        var sections: [(name: String, records: [String])] = []
        for (name, statement) in statements {
            let rows = try await database.execute(statement, [[userID] + mergedIDs])
            sections.append((name, try rows.map { try $0.decode(String.self, column: "record") }))
        }
        return sections
    }

    static func mergedIDs(of userID: RaveID, database: any PostgresQueryable) async throws -> [RaveID] {
        try await database.execute(mergedIDs, [userID]).map { try $0.decode(RaveID.self, column: "source_user_id") }
    }
}
