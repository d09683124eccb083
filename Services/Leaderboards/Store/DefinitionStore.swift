import RavePostgres

/// An achievement as an operator defined it.
struct AchievementDefinition: Sendable, Hashable {
    var appID: String
    var key: String
    var name: String
    var description: String
    var imageURL: String
}

/// Board and achievement definitions in PostgreSQL.
struct DefinitionStore: Sendable {
    let pool: PostgresPool

    private static let boardColumns = """
        board_id, app_id, key, name, sorter, ascending, reset_interval, schedule_start, schedule_end, active,
        versions_start
        """

    static let upsertBoard = PostgresStatement(
        name: "leaderboards_upsert_board",
        sql: """
            INSERT INTO leaderboards (app_id, key, name, sorter, ascending, reset_interval, schedule_start,
                                      schedule_end, active, versions_start)
            VALUES ($1, $2, $3, $4, $5, $6::smallint, $7, $8, $9, $10)
            ON CONFLICT (app_id, key) DO UPDATE SET
                name = EXCLUDED.name, sorter = EXCLUDED.sorter, ascending = EXCLUDED.ascending,
                reset_interval = EXCLUDED.reset_interval, schedule_start = EXCLUDED.schedule_start,
                schedule_end = EXCLUDED.schedule_end, active = EXCLUDED.active, updated_at = now()
            RETURNING \(boardColumns)
            """)
    static let selectBoard = PostgresStatement(
        name: "leaderboards_select_board",
        sql: "SELECT \(boardColumns) FROM leaderboards WHERE app_id = $1 AND key = $2")
    static let selectActiveBoards = PostgresStatement(
        name: "leaderboards_select_active_boards",
        sql: "SELECT \(boardColumns) FROM leaderboards WHERE app_id = $1 AND active ORDER BY sorter, key")
    static let selectBoards = PostgresStatement(
        name: "leaderboards_select_boards",
        sql: "SELECT \(boardColumns) FROM leaderboards WHERE app_id = $1 ORDER BY sorter, key")
    static let selectEveryActiveBoard = PostgresStatement(
        name: "leaderboards_select_every_active_board",
        sql: "SELECT \(boardColumns) FROM leaderboards WHERE active")
    static let upsertAchievement = PostgresStatement(
        name: "leaderboards_upsert_achievement",
        sql: """
            INSERT INTO achievements (app_id, key, name, description, image_url) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (app_id, key) DO UPDATE SET
                name = EXCLUDED.name, description = EXCLUDED.description, image_url = EXCLUDED.image_url,
                updated_at = now()
            """)

    /// Creates or replaces a board and returns it as stored.
    ///
    /// `versionsStart` counts only when the board is new.
    func defineBoard(_ board: BoardDefinition) async throws -> BoardDefinition {
        let rows = try await pool.execute(
            Self.upsertBoard,
            [
                board.appID, board.key, board.name, board.sorter, board.ascending, Int32(board.resetPeriod.rawValue),
                board.schedule.map { PostgresTimestamp(microsecondsSinceEpoch: $0.lowerBound) },
                board.schedule.map { PostgresTimestamp(microsecondsSinceEpoch: $0.upperBound) }, board.active,
                PostgresTimestamp(microsecondsSinceEpoch: board.versionsStart),
            ])
        guard let row = rows.first else { throw PostgresError(.client, "upsert returned no row") }
        return try Self.board(from: row)
    }

    func board(appID: String, key: String) async throws -> BoardDefinition? {
        try await pool.execute(Self.selectBoard, [appID, key]).first.map(Self.board(from:))
    }

    /// The app's active boards in display order.
    func activeBoards(appID: String) async throws -> [BoardDefinition] {
        try await pool.execute(Self.selectActiveBoards, [appID]).map(Self.board(from:))
    }

    /// Every board of the app, inactive ones too, in display order (for operators).
    func boards(appID: String) async throws -> [BoardDefinition] {
        try await pool.execute(Self.selectBoards, [appID]).map(Self.board(from:))
    }

    /// Every active board of every app, for warming the indexes at start-up.
    func everyActiveBoard() async throws -> [BoardDefinition] {
        try await pool.execute(Self.selectEveryActiveBoard, []).map(Self.board(from:))
    }

    func defineAchievement(_ achievement: AchievementDefinition) async throws {
        _ = try await pool.execute(
            Self.upsertAchievement,
            [achievement.appID, achievement.key, achievement.name, achievement.description, achievement.imageURL])
    }

    private static func board(from row: PostgresRow) throws -> BoardDefinition {
        let start = try row.decode(PostgresTimestamp?.self, column: "schedule_start")
        let end = try row.decode(PostgresTimestamp?.self, column: "schedule_end")
        var schedule: Range<Int64>?
        if let start, let end { schedule = start.microsecondsSinceEpoch..<end.microsecondsSinceEpoch }
        let period = try row.decode(Int64.self, column: "reset_interval")
        return BoardDefinition(
            boardID: try row.decode(Int64.self, column: "board_id"),
            appID: try row.decode(String.self, column: "app_id"),
            key: try row.decode(String.self, column: "key"),
            name: try row.decode(String.self, column: "name"),
            sorter: Int32(truncatingIfNeeded: try row.decode(Int64.self, column: "sorter")),
            ascending: try row.decode(Bool.self, column: "ascending"),
            resetPeriod: ResetPeriod(rawValue: Int16(truncatingIfNeeded: period)) ?? .none,
            schedule: schedule,
            active: try row.decode(Bool.self, column: "active"),
            versionsStart: try row.decode(PostgresTimestamp.self, column: "versions_start").microsecondsSinceEpoch)
    }
}
