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

/// One stored best score: the player, the score, and when it was reached (microseconds since the Unix epoch).
package typealias ScoreEntry = (userID: RaveID, score: Int64, achievedAt: Int64)

/// Entries of a board version as one query returned them: three aligned binary arrays, read in place.
struct ScoreChunk: Sendable {
    let users: FixedWidthArray
    let scores: FixedWidthArray
    let times: FixedWidthArray

    var count: Int { users.count }
    func userID(_ index: Int) -> RaveID { users.raveID(index) }
    func score(_ index: Int) -> Int64 { scores.int64(index) }
    /// Microseconds since the Unix epoch.
    func achievedAt(_ index: Int) -> Int64 { times.int64(index) + ScoreStore.postgresEpochMicroseconds }
}

/// Best scores per board version in PostgreSQL: the durable truth the in-memory indexes mirror.
struct ScoreStore: Sendable {
    let pool: PostgresPool

    /// The same "better" rule as `RankIndex.improves`, so the table and the index never disagree.
    ///
    /// A batch of one sort direction (the usual case: most batches hold one board) runs one plain INSERT with a
    /// constant comparison; a batch of both directions runs `upsertBothDirections`. Each statement takes its row locks
    /// in key order, descending boards' rows before ascending ones', so concurrent batches never deadlock.
    static let upsertDescending = upsert(name: "leaderboards_upsert_scores_descending", better: ">")
    static let upsertAscending = upsert(name: "leaderboards_upsert_scores_ascending", better: "<")

    private static func upsert(name: String, better: String) -> PostgresStatement {
        PostgresStatement(
            name: name,
            sql: """
                INSERT INTO scores AS s (board_id, version, user_id, score, achieved_at)
                SELECT b, v, u, sc, timestamptz 'epoch' + a * interval '1 microsecond'
                FROM unnest($1::int8[], $2::int4[], $3::uuid[], $4::int8[], $5::int8[]) AS t(b, v, u, sc, a)
                ORDER BY b, v, u
                ON CONFLICT (board_id, version, user_id) DO UPDATE
                    SET score = EXCLUDED.score, achieved_at = EXCLUDED.achieved_at
                    WHERE EXCLUDED.score \(better) s.score
                       OR (EXCLUDED.score = s.score AND EXCLUDED.achieved_at < s.achieved_at)
                """)
    }

    /// Both sort directions in one statement.
    ///
    /// `$6` marks ascending rows (1), and each direction's rows go through their own INSERT with a constant
    /// comparison, so a conflicting row costs no look-up of its board's direction. The unreferenced `ascending`
    /// INSERT runs after the main one, so descending rows are locked first, as the one-direction statements keep.
    static let upsertBothDirections = PostgresStatement(
        name: "leaderboards_upsert_scores_by_direction",
        sql: """
            WITH rows AS (
                SELECT b, v, u, sc, timestamptz 'epoch' + a * interval '1 microsecond' AS at, d
                FROM unnest($1::int8[], $2::int4[], $3::uuid[], $4::int8[], $5::int8[], $6::int4[])
                    AS t(b, v, u, sc, a, d)
            ), ascending AS (
                INSERT INTO scores AS s (board_id, version, user_id, score, achieved_at)
                SELECT b, v, u, sc, at FROM rows WHERE d = 1 ORDER BY b, v, u
                ON CONFLICT (board_id, version, user_id) DO UPDATE
                    SET score = EXCLUDED.score, achieved_at = EXCLUDED.achieved_at
                    WHERE EXCLUDED.score < s.score
                       OR (EXCLUDED.score = s.score AND EXCLUDED.achieved_at < s.achieved_at)
            )
            INSERT INTO scores AS s (board_id, version, user_id, score, achieved_at)
            SELECT b, v, u, sc, at FROM rows WHERE d = 0 ORDER BY b, v, u
            ON CONFLICT (board_id, version, user_id) DO UPDATE
                SET score = EXCLUDED.score, achieved_at = EXCLUDED.achieved_at
                WHERE EXCLUDED.score > s.score
                   OR (EXCLUDED.score = s.score AND EXCLUDED.achieved_at < s.achieved_at)
            """)
    /// One chunk of a key range of a version as three parallel arrays (see `FixedWidthArray`).
    ///
    /// The range is `$3` < user_id ≤ `$4`, the chunk its first `$5` entries in key order. The arrays follow one
    /// input order, so they line up, but no order is asked of them: an `ORDER BY` inside `array_agg` would sort
    /// every chunk three times, and the index sorts the entries anyway.
    static let selectRangeChunk = PostgresStatement(
        name: "leaderboards_select_range_chunk_arrays",
        sql: """
            SELECT array_agg(user_id) AS users, array_agg(score) AS scores, array_agg(achieved_at) AS times
            FROM (SELECT user_id, score, achieved_at FROM scores
                  WHERE board_id = $1 AND version = $2 AND user_id > $3 AND user_id <= $4
                  ORDER BY user_id LIMIT $5) AS chunk
            """)
    /// The planner's histogram of user ids: bounds that split the key space into ranges of similar size.
    static let selectUserHistogram = PostgresStatement(
        name: "leaderboards_select_user_histogram",
        sql: """
            SELECT histogram_bounds::text::uuid[] AS bounds FROM pg_stats
            WHERE schemaname = current_schema() AND tablename = 'scores' AND attname = 'user_id'
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
        var parameters: [(any PostgresEncodable)?] = [
            PostgresArrayParameter(writes.lazy.map(\.boardID)),
            PostgresArrayParameter(writes.lazy.map { Int32($0.version) }),
            PostgresArrayParameter(writes.lazy.map(\.userID)),
            PostgresArrayParameter(writes.lazy.map(\.score)),
            PostgresArrayParameter(writes.lazy.map(\.achievedAt)),
        ]
        let ascending = writes.lazy.filter(\.ascending).count
        let statement: PostgresStatement
        switch ascending {
        case 0: statement = Self.upsertDescending
        case writes.count: statement = Self.upsertAscending
        default:
            statement = Self.upsertBothDirections
            parameters.append(PostgresArrayParameter(writes.lazy.map { Int32($0.ascending ? 1 : 0) }))
        }
        _ = try await pool.execute(statement, parameters)
    }

    /// Every entry of a board version, in no particular order, as chunks (`chunks` collected).
    func entries(boardID: Int64, version: Int, ranges: Int = 4, chunkSize: Int = 100_000) async throws -> [[ScoreEntry]]
    {
        var entries: [[ScoreEntry]] = []
        for try await chunk in chunks(boardID: boardID, version: version, ranges: ranges, chunkSize: chunkSize) {
            entries.append((0..<chunk.count).map { (chunk.userID($0), chunk.score($0), chunk.achievedAt($0)) })
        }
        return entries
    }

    /// Every entry of a board version, in no particular order, as chunks delivered while the rest are read.
    ///
    /// The key space is cut into `ranges` ranges by the planner's histogram of user ids, and the ranges are read
    /// concurrently, each on its own connection with keyset paging (`chunkSize` entries a query, so no query holds
    /// a huge result): PostgreSQL's scans, this process's decoding and the consumer's work on earlier chunks then
    /// overlap on several cores. Each player appears once (the table's key is board, version, player). Ending the
    /// iteration early cancels the reads.
    func chunks(
        boardID: Int64, version: Int, ranges: Int = 4, chunkSize: Int = 100_000
    ) -> AsyncThrowingStream<ScoreChunk, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ScoreChunk.self)
        let reader = Task {
            do {
                let bounds = try await rangeBounds(count: ranges)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for range in 0..<bounds.count - 1 {
                        group.addTask {
                            try await self.read(
                                boardID: boardID, version: version, after: bounds[range], through: bounds[range + 1],
                                chunkSize: chunkSize
                            ) { continuation.yield($0) }
                        }
                    }
                    try await group.waitForAll()
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in reader.cancel() }
        return stream
    }

    /// `count` + 1 bounds from the lowest to the highest Rave ID; fewer ranges when the table has no statistics.
    private func rangeBounds(count: Int) async throws -> [RaveID] {
        let lowest = RaveID(high: 0, low: 0)
        let highest = RaveID(high: .max, low: .max)
        let histogram =
            try await pool.execute(Self.selectUserHistogram).first?.decode([RaveID]?.self, column: "bounds") ?? []
        guard count > 1, histogram.count > count else { return [lowest, highest] }
        let inner = (1..<count).map { histogram[$0 * (histogram.count - 1) / count] }
        return [lowest] + inner + [highest]
    }

    /// Reads the entries with `after` < user id ≤ `last` in chunks of `chunkSize`, in key order, handing each on.
    private func read(
        boardID: Int64, version: Int, after first: RaveID, through last: RaveID, chunkSize: Int,
        each: (ScoreChunk) -> Void
    ) async throws {
        var after = first
        while true {
            try Task.checkCancellation()
            let rows = try await pool.execute(
                Self.selectRangeChunk, [boardID, Int32(version), after, last, Int64(chunkSize)])
            guard let row = rows.first else { return }
            let chunk = ScoreChunk(
                users: try row.decode(FixedWidthArray.self, column: "users"),
                scores: try row.decode(FixedWidthArray.self, column: "scores"),
                times: try row.decode(FixedWidthArray.self, column: "times"))
            guard chunk.scores.count == chunk.count, chunk.times.count == chunk.count else {
                throw LeaderboardsError.unavailable("a chunk of board \(boardID) came back with uneven columns")
            }
            guard chunk.count > 0 else { return }
            var highestUser = after
            for index in 0..<chunk.count {
                let userID = chunk.userID(index)
                if highestUser < userID { highestUser = userID }
            }
            each(chunk)
            guard chunk.count == chunkSize else { return }
            after = highestUser
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
