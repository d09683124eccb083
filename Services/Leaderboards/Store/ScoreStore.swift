import RavePostgres

/// A best score on its way to the table.
struct ScoreWrite: Sendable, Hashable {
    var boardID: Int64
    var version: Int
    var userID: RaveID
    var score: Int64
    var achievedAt: Int64
    var ascending: Bool

    /// Whether this write beats `other` for the same row: a better score, or the same score reached earlier.
    func beats(_ other: ScoreWrite) -> Bool {
        if score != other.score { return ascending ? score < other.score : score > other.score }
        return achievedAt < other.achievedAt
    }
}

/// Best scores per board version in PostgreSQL: the durable truth the in-memory indexes mirror.
struct ScoreStore: Sendable {
    let pool: PostgresPool

    /// The same "better" rule as `RankIndex.improves`, so the table and the index never disagree.
    static let upsertBatch = PostgresStatement(
        name: "leaderboards_upsert_scores_ordered",
        sql: """
            INSERT INTO scores AS s (board_id, version, user_id, score, achieved_at)
            SELECT b, v, u, sc, timestamptz 'epoch' + a * interval '1 microsecond'
            FROM unnest($1::int8[], $2::int4[], $3::uuid[], $4::int8[], $5::int8[]) AS t(b, v, u, sc, a)
            ORDER BY b, v, u
            ON CONFLICT (board_id, version, user_id) DO UPDATE
                SET score = EXCLUDED.score, achieved_at = EXCLUDED.achieved_at
                WHERE CASE WHEN (SELECT l.ascending FROM leaderboards l WHERE l.board_id = s.board_id)
                           THEN EXCLUDED.score < s.score ELSE EXCLUDED.score > s.score END
                   OR (EXCLUDED.score = s.score AND EXCLUDED.achieved_at < s.achieved_at)
            """)
    /// A chunk of a version in user-id order as three parallel arrays (see `FixedWidthArray`).
    static let selectVersionChunk = PostgresStatement(
        name: "leaderboards_select_version_chunk_arrays",
        sql: """
            SELECT array_agg(user_id ORDER BY user_id) AS users, array_agg(score ORDER BY user_id) AS scores,
                   array_agg(achieved_at ORDER BY user_id) AS times
            FROM (SELECT user_id, score, achieved_at FROM scores
                  WHERE board_id = $1 AND version = $2 AND user_id > $3 ORDER BY user_id LIMIT $4) AS chunk
            """)
    static let countVersion = PostgresStatement(
        name: "leaderboards_count_version",
        sql: "SELECT count(*) AS total FROM scores WHERE board_id = $1 AND version = $2")
    static let selectPageAscending = PostgresStatement(
        name: "leaderboards_select_page_ascending",
        sql: """
            SELECT user_id, score, achieved_at FROM scores WHERE board_id = $1 AND version = $2
            ORDER BY score ASC, achieved_at, user_id OFFSET $3 LIMIT $4
            """)
    static let selectPageDescending = PostgresStatement(
        name: "leaderboards_select_page_descending",
        sql: """
            SELECT user_id, score, achieved_at FROM scores WHERE board_id = $1 AND version = $2
            ORDER BY score DESC, achieved_at, user_id OFFSET $3 LIMIT $4
            """)

    /// Writes a batch in one statement (one transaction); rows that are not better than the stored ones are kept.
    func write(_ batch: [ScoreWrite]) async throws {
        // One statement cannot update a row twice: keep the best write per row.
        var best: [RowKey: ScoreWrite] = [:]
        for write in batch {
            let key = RowKey(boardID: write.boardID, version: write.version, userID: write.userID)
            if let existing = best[key], !write.beats(existing) { continue }
            best[key] = write
        }
        // Rows in one order for every batch: concurrent batches touching the same players (a popular player
        // submitting twice) then wait for each other instead of deadlocking.
        let writes = best.values.sorted { ($0.boardID, $0.version, $0.userID) < ($1.boardID, $1.version, $1.userID) }
        _ = try await pool.execute(
            Self.upsertBatch,
            [
                writes.map(\.boardID), writes.map { Int32($0.version) }, writes.map(\.userID), writes.map(\.score),
                writes.map(\.achievedAt),
            ])
    }

    /// Every entry of a board version, read in user-id order with keyset paging so no query holds a huge result.
    func entries(
        boardID: Int64, version: Int, chunkSize: Int = 100_000
    ) async throws -> [(
        userID: RaveID, score: Int64, achievedAt: Int64
    )] {
        var result: [(userID: RaveID, score: Int64, achievedAt: Int64)] = []
        var after = RaveID(high: 0, low: 0)
        while true {
            let rows = try await pool.execute(
                Self.selectVersionChunk, [boardID, Int32(version), after, Int64(chunkSize)])
            guard let row = rows.first else { return result }
            let users = try row.decode(FixedWidthArray.self, column: "users")
            let scores = try row.decode(FixedWidthArray.self, column: "scores")
            let times = try row.decode(FixedWidthArray.self, column: "times")
            guard scores.count == users.count, times.count == users.count else {
                throw LeaderboardsError.unavailable("a chunk of board \(boardID) came back with uneven columns")
            }
            result.reserveCapacity(result.count + users.count)
            for index in 0..<users.count {
                result.append(
                    (users.raveID(index), scores.int64(index), times.int64(index) + Self.postgresEpochMicroseconds))
            }
            guard users.count == chunkSize, let last = result.last else { return result }
            after = last.userID
        }
    }

    /// timestamptz counts microseconds from 2000-01-01; the index counts from 1970-01-01.
    static let postgresEpochMicroseconds: Int64 = 946_684_800_000_000

    func count(boardID: Int64, version: Int) async throws -> Int {
        let rows = try await pool.execute(Self.countVersion, [boardID, Int32(version)])
        return try rows.first?.decode(Int.self, column: "total") ?? 0
    }

    /// A page of a version that is no longer in memory (a previous tournament), best first.
    func page(of board: BoardDefinition, version: Int, offset: Int, limit: Int) async throws -> [RankedScore] {
        let statement = board.ascending ? Self.selectPageAscending : Self.selectPageDescending
        let rows = try await pool.execute(
            statement, [board.boardID, Int32(version), Int64(offset), Int64(limit)])
        return try rows.enumerated().map { index, row in
            let entry = try Self.entry(from: row)
            return RankedScore(
                userID: entry.userID, score: entry.score, achievedAt: entry.achievedAt, position: offset + index + 1)
        }
    }

    private struct RowKey: Hashable {
        var boardID: Int64
        var version: Int
        var userID: RaveID
    }

    private static func entry(from row: PostgresRow) throws -> (userID: RaveID, score: Int64, achievedAt: Int64) {
        (
            try row.decode(RaveID.self, at: 0), try row.decode(Int64.self, at: 1),
            try row.decode(PostgresTimestamp.self, at: 2).microsecondsSinceEpoch
        )
    }
}
