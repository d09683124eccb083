import RavePostgres

/// What `ListLeaderboards` reports of a board another instance owns (or nobody does yet), read from the table:
/// the table is the truth, and asking here neither takes the board's lease nor loads its index.
///
/// Counting is a scan of the version's rows (the primary key's prefix), so this costs more than the owner's
/// index; it runs only for boards this instance does not hold.
struct UnownedBoardReader: Sendable {
    let pool: PostgresPool

    /// The player's row and global position under the ranking rules (score, then earlier `achieved_at`, then
    /// Rave ID in byte order, which is how PostgreSQL orders `uuid`).
    static let selectStanding = PostgresStatement(
        name: "leaderboards_select_unowned_standing",
        sql: """
            SELECT s.score, s.achieved_at,
                   1 + (SELECT count(*) FROM scores o WHERE o.board_id = s.board_id AND o.version = s.version
                        AND (CASE WHEN $4 THEN o.score < s.score ELSE o.score > s.score END
                             OR (o.score = s.score AND (o.achieved_at < s.achieved_at
                                 OR (o.achieved_at = s.achieved_at AND o.user_id < s.user_id))))) AS position
            FROM scores s WHERE s.board_id = $1 AND s.version = $2 AND s.user_id = $3
            """)
    static let selectRows = PostgresStatement(
        name: "leaderboards_select_unowned_rows",
        sql: """
            SELECT user_id, score, achieved_at
            FROM scores WHERE board_id = $1 AND version = $2 AND user_id = ANY($3::uuid[])
            """)
    static let countVersion = PostgresStatement(
        name: "leaderboards_count_unowned_version",
        sql: "SELECT count(*) AS total FROM scores WHERE board_id = $1 AND version = $2")

    /// The number of entries in a version.
    func count(of board: BoardDefinition, version: Int) async throws -> Int {
        let rows = try await pool.execute(Self.countVersion, [board.boardID, Int32(version)])
        return Int(try rows.first?.decode(Int64.self, column: "total") ?? 0)
    }

    /// The player's best and global position, or nil without a score.
    func standing(of userID: RaveID, in board: BoardDefinition, version: Int) async throws -> RankedScore? {
        let rows = try await pool.execute(
            Self.selectStanding, [board.boardID, Int32(version), userID, board.ascending])
        guard let row = rows.first else { return nil }
        return RankedScore(
            userID: userID, score: try row.decode(Int64.self, column: "score"),
            achievedAt: try row.decode(PostgresTimestamp.self, column: "achieved_at").microsecondsSinceEpoch,
            position: Int(try row.decode(Int64.self, column: "position")))
    }

    /// The player's position among themselves and their friends who have a score (0 without a score).
    func friendsPosition(
        of userID: RaveID, friends: [RaveID], in board: BoardDefinition, version: Int
    ) async throws -> Int {
        let members = Array(Set(friends).union([userID]))
        let rows = try await pool.execute(Self.selectRows, [board.boardID, Int32(version), members])
        let entries = try rows.map { row in
            (
                userID: try row.decode(RaveID.self, column: "user_id"),
                score: try row.decode(Int64.self, column: "score"),
                achievedAt: try row.decode(PostgresTimestamp.self, column: "achieved_at").microsecondsSinceEpoch
            )
        }
        guard let mine = entries.first(where: { $0.userID == userID }) else { return 0 }
        let ahead = entries.filter { other in
            if other.score != mine.score {
                return board.ascending ? other.score < mine.score : other.score > mine.score
            }
            if other.achievedAt != mine.achievedAt { return other.achievedAt < mine.achievedAt }
            return other.userID < mine.userID
        }
        return ahead.count + 1
    }
}
