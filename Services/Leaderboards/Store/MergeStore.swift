import RaveMerges
import RavePostgres

/// One board version's best after a merge, for updating the loaded index.
struct MergedScore: Sendable, Hashable {
    var boardID: Int64
    var version: Int
    var score: Int64
    var achievedAt: Int64
}

/// Combines two users' leaderboard data in one transaction (DESIGN.md §7).
struct MergeStore: Sendable {
    let pool: PostgresPool

    static let recordMerge = PostgresStatement(
        name: "leaderboards_record_merge",
        sql: """
            INSERT INTO applied_merges (merge_id, source_user_id, target_user_id) VALUES ($1, $2, $3)
            ON CONFLICT (merge_id) DO NOTHING RETURNING merge_id
            """)
    /// The target keeps the better score per board and version, by the same rule as every submit.
    static let mergeScores = PostgresStatement(
        name: "leaderboards_merge_scores",
        sql: """
            INSERT INTO scores AS s (board_id, version, user_id, score, achieved_at)
            SELECT board_id, version, $2, score, achieved_at FROM scores WHERE user_id = $1
            ON CONFLICT (board_id, version, user_id) DO UPDATE
                SET score = EXCLUDED.score, achieved_at = EXCLUDED.achieved_at
                WHERE CASE WHEN (SELECT l.ascending FROM leaderboards l WHERE l.board_id = s.board_id)
                           THEN EXCLUDED.score < s.score ELSE EXCLUDED.score > s.score END
                   OR (EXCLUDED.score = s.score AND EXCLUDED.achieved_at < s.achieved_at)
            """)
    static let deleteSourceScores = PostgresStatement(
        name: "leaderboards_delete_source_scores", sql: "DELETE FROM scores WHERE user_id = $1")
    static let selectTargetScores = PostgresStatement(
        name: "leaderboards_select_user_scores",
        sql: "SELECT board_id, version, score, achieved_at FROM scores WHERE user_id = $1")
    /// Achievements are united; an achievement both unlocked keeps the earlier unlock.
    static let mergeUnlocks = PostgresStatement(
        name: "leaderboards_merge_unlocks",
        sql: """
            INSERT INTO achievement_unlocks AS u (app_id, key, user_id, unlocked_at)
            SELECT app_id, key, $2, unlocked_at FROM achievement_unlocks WHERE user_id = $1
            ON CONFLICT (app_id, user_id, key) DO UPDATE SET unlocked_at = LEAST(u.unlocked_at, EXCLUDED.unlocked_at)
            """)
    static let deleteSourceUnlocks = PostgresStatement(
        name: "leaderboards_delete_source_unlocks", sql: "DELETE FROM achievement_unlocks WHERE user_id = $1")

    /// Applies the merge once; returns the target's scores afterwards, or nil when `mergeID` was applied before.
    ///
    /// The merge is recorded in `merged_users` in the same transaction, so every later call naming the source
    /// lands on the target.
    func merge(mergeID: String, source: RaveID, target: RaveID, merges: MergedUsers) async throws -> [MergedScore]? {
        try await pool.transaction { transaction in
            let recorded = try await transaction.execute(Self.recordMerge, [mergeID, source, target])
            guard !recorded.isEmpty else { return nil }
            let target = try await merges.record(mergeID: mergeID, source: source, target: target, in: transaction)
            return try await move(source, into: target, in: transaction)
        }
    }

    /// Moves whatever the source still holds (rows a call wrote under the source while the merge ran elsewhere);
    /// returns the target's scores afterwards.
    func sweep(source: RaveID, target: RaveID) async throws -> [MergedScore] {
        try await pool.transaction { transaction in try await move(source, into: target, in: transaction) }
    }

    private func move(
        _ source: RaveID, into target: RaveID, in transaction: PostgresTransaction
    ) async throws -> [MergedScore] {
        _ = try await transaction.execute(Self.mergeScores, [source, target])
        _ = try await transaction.execute(Self.deleteSourceScores, [source])
        _ = try await transaction.execute(Self.mergeUnlocks, [source, target])
        _ = try await transaction.execute(Self.deleteSourceUnlocks, [source])
        return try await transaction.execute(Self.selectTargetScores, [target]).map { row in
            MergedScore(
                boardID: try row.decode(Int64.self, at: 0), version: Int(try row.decode(Int64.self, at: 1)),
                score: try row.decode(Int64.self, at: 2),
                achievedAt: try row.decode(PostgresTimestamp.self, at: 3).microsecondsSinceEpoch)
        }
    }
}
