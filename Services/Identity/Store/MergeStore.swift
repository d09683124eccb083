import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// Merge records, participant acknowledgements, and the statements that move identity-owned data.
///
/// Every method runs in the caller's transaction; the data moves from a source user to a target user.
struct MergeStore: Sendable {
    let database: any PostgresQueryable

    // MARK: - Records

    static let lockUsers = PostgresStatement(
        name: "identity_merge_lock_users",
        sql: "SELECT id, merged_into FROM users WHERE id = ANY($1) ORDER BY id FOR UPDATE")
    static let selectBySource = PostgresStatement(
        name: "identity_merge_by_source", sql: "SELECT id FROM merges WHERE source_user_id = $1")
    static let insertMerge = PostgresStatement(
        name: "identity_merge_insert",
        sql: """
            INSERT INTO merges (id, source_user_id, target_user_id, state, completed_at)
            VALUES ($1, $2, $3, CASE WHEN $4 THEN 'completed' ELSE 'pending' END, CASE WHEN $4 THEN now() END)
            """)
    static let insertParticipant = PostgresStatement(
        name: "identity_merge_insert_participant",
        sql: "INSERT INTO merge_participants (merge_id, participant) VALUES ($1, $2)")
    static let selectMergedIdentities = PostgresStatement(
        name: "identity_select_merged_identities",
        sql: "SELECT source_user_id FROM merged_identities WHERE target_user_id = $1 ORDER BY merged_at")
    static let selectMerge = PostgresStatement(
        name: "identity_merge_select",
        sql: """
            SELECT m.id, m.source_user_id, m.target_user_id, m.state, m.created_at,
                \(SagaParticipantStore.merges.answerColumns)
            FROM merges m WHERE m.id = $1
            """)
    static let complete = PostgresStatement(
        name: "identity_merge_complete",
        sql: """
            UPDATE merges SET state = 'completed', completed_at = now()
            WHERE id = $1 AND state = 'pending'
                AND NOT EXISTS (SELECT 1 FROM merge_participants WHERE merge_id = $1 AND acknowledged_at IS NULL)
            """)

    /// Locks both users (in id order, so concurrent merges cannot deadlock) and returns each one's `merged_into`.
    func lockUsers(_ ids: [RaveID]) async throws -> [RaveID: RaveID?] {
        var result: [RaveID: RaveID?] = [:]
        for row in try await database.execute(Self.lockUsers, [ids]) {
            result[try row.decode(column: "id")] = .some(try row.decode(RaveID?.self, column: "merged_into"))
        }
        return result
    }

    func mergeID(source: RaveID) async throws -> RaveID? {
        try await database.execute(Self.selectBySource, [source]).first?.decode(RaveID.self, column: "id")
    }

    func insert(id: RaveID, source: RaveID, target: RaveID, participants: [String]) async throws {
        _ = try await database.execute(Self.insertMerge, [id, source, target, participants.isEmpty])
        for participant in participants {
            _ = try await database.execute(Self.insertParticipant, [id, participant])
        }
    }

    func merge(_ id: RaveID) async throws -> IdentityV1.Merge? {
        guard let row = try await database.execute(Self.selectMerge, [id]).first else { return nil }
        return try Self.merge(from: row)
    }

    /// A row of `selectMerge`'s columns as the protocol shows a merge.
    static func merge(from row: PostgresRow) throws -> IdentityV1.Merge {
        IdentityV1.Merge(
            mergeId: try row.decode(RaveID.self, column: "id").hex,
            sourceUserId: try row.decode(RaveID.self, column: "source_user_id").hex,
            targetUserId: try row.decode(RaveID.self, column: "target_user_id").hex,
            state: try row.decode(String.self, column: "state") == "completed" ? .completed : .pending,
            acknowledgedBy: try row.decode(column: "acknowledged"),
            pendingParticipants: try row.decode(column: "pending"),
            createdAtUnixMs: try row.decode(Date.self, column: "created_at").unixMilliseconds)
    }

    /// Records a participant's acknowledgement and completes the merge when it was the last one.
    func acknowledge(mergeID: RaveID, participant: String) async throws {
        try await SagaParticipantStore(database: database, table: SagaParticipantStore.merges).acknowledge(
            sagaID: mergeID, participant: participant)
        _ = try await database.execute(Self.complete, [mergeID])
    }

    /// The users merged into `target`, oldest merge first.
    func mergedIdentities(of target: RaveID) async throws -> [RaveID] {
        try await database.execute(Self.selectMergedIdentities, [target]).map {
            try $0.decode(RaveID.self, column: "source_user_id")
        }
    }

    // MARK: - Moving identity-owned data

    /// Statements run in order with ($1 source, $2 target); each says why it is shaped as it is.
    static let moveStatements: [PostgresStatement] = [
        // App data keys are implied (the user's own Rave ID) until a merge makes them differ: both users' implied
        // keys become rows first, while `app_users` still tells which apps each played, so the key statements below
        // combine rows only.
        PostgresStatement(
            name: "identity_merge_write_implied_keys",
            sql: """
                INSERT INTO app_data_keys (user_id, app_id, selected_key)
                SELECT user_id, app_id, replace(user_id::text, '-', '') FROM app_users
                WHERE user_id = $1 OR user_id = $2
                ON CONFLICT (user_id, app_id) DO NOTHING
                """),
        PostgresStatement(name: "identity_merge_drop_links", sql: "DELETE FROM provider_links WHERE user_id = $1"),
        // The target's password wins; the source's moves only when the target has none.
        PostgresStatement(
            name: "identity_merge_password",
            sql: """
                UPDATE password_credentials SET user_id = $2 WHERE user_id = $1
                    AND NOT EXISTS (SELECT 1 FROM password_credentials WHERE user_id = $2)
                """),
        PostgresStatement(
            name: "identity_merge_devices",
            sql: """
                INSERT INTO devices (user_id, device_id, name, platform, first_seen_at, last_seen_at)
                SELECT $2, device_id, name, platform, first_seen_at, last_seen_at FROM devices WHERE user_id = $1
                ON CONFLICT (user_id, device_id) DO UPDATE SET
                    first_seen_at = least(devices.first_seen_at, EXCLUDED.first_seen_at),
                    last_seen_at = greatest(devices.last_seen_at, EXCLUDED.last_seen_at)
                """),
        PostgresStatement(name: "identity_merge_drop_devices", sql: "DELETE FROM devices WHERE user_id = $1"),
        // Devices that played as the source now play as the target (guest login returns the target).
        PostgresStatement(
            name: "identity_merge_device_logins", sql: "UPDATE device_logins SET user_id = $2 WHERE user_id = $1"),
        PostgresStatement(
            name: "identity_merge_app_users",
            sql: """
                INSERT INTO app_users (app_id, user_id, first_seen_at)
                SELECT app_id, $2, first_seen_at FROM app_users WHERE user_id = $1
                ON CONFLICT (app_id, user_id) DO UPDATE SET
                    first_seen_at = least(app_users.first_seen_at, EXCLUDED.first_seen_at)
                """),
        PostgresStatement(name: "identity_merge_drop_app_users", sql: "DELETE FROM app_users WHERE user_id = $1"),
        // Live sessions of the source refresh as the target from now on.
        PostgresStatement(name: "identity_merge_sessions", sql: "UPDATE sessions SET user_id = $2 WHERE user_id = $1"),
        PostgresStatement(
            name: "identity_merge_app_profiles",
            sql: """
                INSERT INTO user_app_profiles (user_id, app_id, display_name, picture_url)
                SELECT $2, app_id, display_name, picture_url FROM user_app_profiles WHERE user_id = $1
                ON CONFLICT (user_id, app_id) DO UPDATE SET
                    display_name = coalesce(user_app_profiles.display_name, EXCLUDED.display_name),
                    picture_url = coalesce(user_app_profiles.picture_url, EXCLUDED.picture_url)
                """),
        PostgresStatement(
            name: "identity_merge_drop_app_profiles", sql: "DELETE FROM user_app_profiles WHERE user_id = $1"),
        // App data keys: where both played an app, every key either had becomes a candidate until the app chooses.
        PostgresStatement(
            name: "identity_merge_key_candidates",
            sql: """
                INSERT INTO app_data_key_candidates (user_id, app_id, key)
                SELECT $2, t.app_id, k.key FROM app_data_keys t
                JOIN app_data_keys s ON s.user_id = $1 AND s.app_id = t.app_id
                CROSS JOIN LATERAL (VALUES (t.selected_key), (s.selected_key)) AS k (key)
                WHERE t.user_id = $2 AND k.key IS NOT NULL
                ON CONFLICT DO NOTHING
                """),
        PostgresStatement(
            name: "identity_merge_key_unselect",
            sql: """
                UPDATE app_data_keys t SET selected_key = NULL FROM app_data_keys s
                WHERE t.user_id = $2 AND s.user_id = $1 AND s.app_id = t.app_id
                """),
        // Apps only the source played keep the source's key: the save game stays where it is.
        PostgresStatement(
            name: "identity_merge_keys",
            sql: """
                INSERT INTO app_data_keys (user_id, app_id, selected_key)
                SELECT $2, app_id, selected_key FROM app_data_keys WHERE user_id = $1
                ON CONFLICT (user_id, app_id) DO NOTHING
                """),
        PostgresStatement(
            name: "identity_merge_earlier_candidates",
            sql: """
                INSERT INTO app_data_key_candidates (user_id, app_id, key)
                SELECT $2, app_id, key FROM app_data_key_candidates WHERE user_id = $1 ON CONFLICT DO NOTHING
                """),
        PostgresStatement(
            name: "identity_merge_drop_candidates", sql: "DELETE FROM app_data_key_candidates WHERE user_id = $1"),
        PostgresStatement(name: "identity_merge_drop_keys", sql: "DELETE FROM app_data_keys WHERE user_id = $1"),
        // The source's second factor protected only the source; pending challenges for it end here.
        PostgresStatement(name: "identity_merge_drop_two_factor", sql: "DELETE FROM two_factor WHERE user_id = $1"),
        PostgresStatement(
            name: "identity_merge_end_challenges",
            sql: "UPDATE two_factor_challenges SET used_at = now() WHERE user_id = $1 AND used_at IS NULL"),
        // Earlier merges into the source now point at the final target, so every id resolves in one step.
        PostgresStatement(
            name: "identity_merge_repoint_identities",
            sql: "UPDATE merged_identities SET target_user_id = $2 WHERE target_user_id = $1"),
        PostgresStatement(
            name: "identity_merge_repoint_users", sql: "UPDATE users SET merged_into = $2 WHERE merged_into = $1"),
    ]
    /// A provider both had stays with the target's account (one link per provider per user); the moved links are
    /// returned, as each is newly linked to the target.
    static let moveLinks = PostgresStatement(
        name: "identity_merge_links",
        sql: """
            UPDATE provider_links SET user_id = $2 WHERE user_id = $1
                AND provider NOT IN (SELECT provider FROM provider_links WHERE user_id = $2)
            RETURNING provider, subject
            """)
    // Personal data the target lacks comes from the source, and the source row keeps only its id. Two statements,
    // because the username and verified email must leave the source before the target may take them.
    static let clearSource = PostgresStatement(
        name: "identity_merge_clear_source",
        sql: """
            UPDATE users u SET username = NULL, display_name = NULL, picture_url = NULL, email = NULL,
                email_verified = false, birth_date = NULL, birth_year = NULL, gender = NULL, country = NULL,
                merged_into = $2, updated_at = now()
            FROM (SELECT * FROM users WHERE id = $1) AS old
            WHERE u.id = $1
            RETURNING old.username, old.display_name, old.picture_url, old.email, old.email_verified,
                old.birth_date, old.birth_year, old.gender, old.country
            """)
    static let fillTarget = PostgresStatement(
        name: "identity_merge_fill_target",
        sql: """
            UPDATE users SET username = coalesce(username, $2), display_name = coalesce(display_name, $3),
                picture_url = coalesce(picture_url, $4),
                email_verified = CASE WHEN email IS NULL THEN $6 ELSE email_verified END,
                email = coalesce(email, $5), birth_date = coalesce(birth_date, $7),
                birth_year = coalesce(birth_year, $8), gender = coalesce(gender, $9), country = coalesce(country, $10),
                updated_at = now()
            WHERE id = $1
            """)
    /// Puts the merged-away user on the revocation feed, numbered from its counter (whose row lock, held until
    /// commit, keeps the feed in commit order): every gateway forgets its cached resolutions of the user.
    static let insertMergeNotice = PostgresStatement(
        name: "identity_merge_insert_notice",
        sql: """
            WITH numbered AS (UPDATE revocation_counter SET last = last + 1 RETURNING last)
            INSERT INTO merge_notices (seq, user_id) SELECT last, $1 FROM numbered
            """)
    static let insertMergedIdentity = PostgresStatement(
        name: "identity_merge_insert_identity",
        sql: "INSERT INTO merged_identities (source_user_id, target_user_id, merge_id) VALUES ($1, $2, $3)")

    /// Moves everything identity owns from `source` to `target` and points the source at the target forever;
    /// returns the provider links (stored provider name, subject) that moved to the target.
    func moveData(
        from source: RaveID, to target: RaveID, mergeID: RaveID
    ) async throws -> [(provider: String, subject: String)] {
        let movedLinks = try await database.execute(Self.moveLinks, [source, target]).map { row in
            (
                provider: try row.decode(String.self, column: "provider"),
                subject: try row.decode(String.self, column: "subject")
            )
        }
        for statement in Self.moveStatements {
            _ = try await database.execute(statement, [source, target])
        }
        let old = try await database.execute(Self.clearSource, [source, target])[0]
        var values: [(any PostgresEncodable)?] = [target]
        for column in ["username", "display_name", "picture_url", "email"] {
            values.append(try old.decode(String?.self, column: column))
        }
        values.append(try old.decode(Bool.self, column: "email_verified"))
        values.append(try old.decode(PostgresDate?.self, column: "birth_date"))
        values.append(try old.decode(Int32?.self, column: "birth_year"))
        values.append(try old.decode(String?.self, column: "gender"))
        values.append(try old.decode(String?.self, column: "country"))
        _ = try await database.execute(Self.fillTarget, values)
        _ = try await database.execute(Self.insertMergedIdentity, [source, target, mergeID])
        _ = try await database.execute(Self.insertMergeNotice, [source])
        return movedLinks
    }
}
