import RavePostgres

/// The SQL of `merged_users`, a table every data service holds (created by its own migration, see
/// docs/ARCHITECTURE.md "Merged ids"): `source_id` (primary key) → `target_id`, `merge_id`, `merged_at`.
///
/// Targets are kept final: recording a merge of B into C also re-points every row that pointed at B, so one
/// look-up resolves any id.
enum MergedUsersStore {
    /// The NOTIFY channel a recorded merge is announced on ("<source> <target>", both as uuid text).
    static let channel = "merged_users"

    /// Records `$2` (source) → `$3` (target, itself resolved first), re-points rows that pointed at the source, and
    /// announces the merge; returns the final target and whether the row is new.
    static let record = PostgresStatement(
        name: "merged_users_record",
        sql: """
            WITH final AS (
                SELECT COALESCE((SELECT target_id FROM merged_users WHERE source_id = $3::uuid), $3::uuid) AS target_id),
            recorded AS (
                INSERT INTO merged_users (source_id, target_id, merge_id)
                SELECT $2::uuid, target_id, $1 FROM final
                ON CONFLICT (source_id) DO NOTHING
                RETURNING target_id),
            repointed AS (
                UPDATE merged_users SET target_id = (SELECT target_id FROM final) WHERE target_id = $2::uuid
                RETURNING source_id)
            SELECT COALESCE((SELECT target_id FROM recorded),
                            (SELECT target_id FROM merged_users WHERE source_id = $2::uuid)) AS target_id,
                   EXISTS (SELECT 1 FROM recorded) AS new,
                   CASE WHEN EXISTS (SELECT 1 FROM recorded)
                        THEN pg_notify('merged_users', $2::uuid::text || ' ' || (SELECT target_id FROM final)::text)
                   END AS announced,
                   (SELECT count(*) FROM repointed) AS repointed
            """)

    /// The targets of those of `$1` that were merged away.
    static let lookup = PostgresStatement(
        name: "merged_users_lookup",
        sql: "SELECT source_id, target_id FROM merged_users WHERE source_id = ANY($1::uuid[])")

    /// Every merge, at most `$1` of them: a process that holds them all knows every other id is not merged.
    static let all = PostgresStatement(
        name: "merged_users_all", sql: "SELECT source_id, target_id FROM merged_users LIMIT $1")

    /// Merges recorded in the last `$1` milliseconds (by the database's clock), oldest first.
    static let recent = PostgresStatement(
        name: "merged_users_recent",
        sql: """
            SELECT source_id, target_id FROM merged_users
            WHERE merged_at > now() - $1::int8 * interval '1 millisecond'
            ORDER BY merged_at
            """)

    /// The ids merged into `$1` (every source whose final target it is).
    static let sources = PostgresStatement(
        name: "merged_users_sources", sql: "SELECT source_id FROM merged_users WHERE target_id = $1")

    // MARK: - Erasures

    /// Records an erasure id (never the user's) in `applied_erasures`, a table every data service holds; a row back
    /// means it is new.
    static let recordErasure = PostgresStatement(
        name: "applied_erasures_record",
        sql: "INSERT INTO applied_erasures (erasure_id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING 1")

    /// The ids merged into any of `$1`.
    static let sourcesOfAny = PostgresStatement(
        name: "merged_users_sources_of_any",
        sql: "SELECT source_id FROM merged_users WHERE target_id = ANY($1::uuid[]) ORDER BY merged_at, source_id")

    /// Deletes every row that names one of `$1`.
    static let forget = PostgresStatement(
        name: "merged_users_forget",
        sql: "DELETE FROM merged_users WHERE source_id = ANY($1::uuid[]) OR target_id = ANY($1::uuid[])")

    /// Announces an erasure to every replica at commit.
    ///
    /// `$1` is the ids' hex, space-separated. The notification is not stored: nothing in a table names them
    /// afterwards.
    static let announceErasure = PostgresStatement(
        name: "merged_users_announce_erasure", sql: "SELECT pg_notify('merged_users', 'erased ' || $1)")
}
