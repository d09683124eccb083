import RaveMerges
import RavePostgres

/// Reads an exported account's scores and achievements (docs/leaderboards.md, "Exporting an account"): the same rows
/// an erasure of the user erases or anonymises.
enum ExportStore {
    /// The sections, in page order.
    static let sections: [ExportSection] = [
        ExportSection(
            "scores", service: "leaderboards",
            sql: """
                SELECT s.board_id, l.app_id, l.key AS leaderboard_key, s.version::bigint AS version, s.user_id, s.score,
                       s.achieved_at
                FROM scores s JOIN leaderboards l USING (board_id)
                WHERE s.user_id = ANY($1::uuid[])
                """,
            keys: [.integer("board_id"), .integer("version"), .id("user_id")]
        ) { row in
            var record = ExportRecord()
            record.string("app_id", try row.decode(column: "app_id"))
            record.string("leaderboard_key", try row.decode(column: "leaderboard_key"))
            record.int("version", Int(try row.decode(Int64.self, column: "version")))
            record.id("user_id", try row.decode(column: "user_id"))
            record.int64("score", try row.decode(column: "score"))
            record.time("achieved_at", try row.decode(column: "achieved_at"))
            return record
        },
        ExportSection(
            "achievements", service: "leaderboards",
            sql: """
                SELECT app_id, key, user_id, unlocked_at FROM achievement_unlocks WHERE user_id = ANY($1::uuid[])
                """,
            keys: [.text("app_id"), .id("user_id"), .text("key")]
        ) { row in
            var record = ExportRecord()
            record.string("app_id", try row.decode(column: "app_id"))
            record.string("achievement_key", try row.decode(column: "key"))
            record.id("user_id", try row.decode(column: "user_id"))
            record.time("unlocked_at", try row.decode(column: "unlocked_at"))
            return record
        },
        ExportSection.merges(
            service: "leaderboards", table: "applied_merges", source: "source_user_id", target: "target_user_id"),
    ]
}
