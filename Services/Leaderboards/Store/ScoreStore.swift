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

/// Entries of a board version as one chunk of a COPY delivered them: three aligned columns.
struct ScoreChunk: Sendable {
    let users: [RaveID]
    let scores: [Int64]
    /// Microseconds since the Unix epoch.
    let times: [Int64]

    /// Reads the rows of `ScoreStore.copyVersion` (user_id, score, achieved_at); a NULL or a value of another
    /// type throws.
    init(_ rows: PostgresCopyRows) throws {
        guard rows.fieldCount == 3 else {
            throw PostgresError(.decoding, "a chunk of scores came with \(rows.fieldCount) fields instead of 3")
        }
        var users: [RaveID] = []
        var scores: [Int64] = []
        var times: [Int64] = []
        users.reserveCapacity(rows.count)
        scores.reserveCapacity(rows.count)
        times.reserveCapacity(rows.count)
        for row in 0..<rows.count {
            users.append(try rows.raveID(row: row, field: 0))
            scores.append(try rows.int64(row: row, field: 1))
            times.append(try rows.postgresMicroseconds(row: row, field: 2) + ScoreStore.postgresEpochMicroseconds)
        }
        self.users = users
        self.scores = scores
        self.times = times
    }

    var count: Int { users.count }
    func userID(_ index: Int) -> RaveID { users[index] }
    func score(_ index: Int) -> Int64 { scores[index] }
    /// Microseconds since the Unix epoch.
    func achievedAt(_ index: Int) -> Int64 { times[index] }
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
    /// Every entry of a version, for a binary COPY: one sequential (or index) scan, no per-row result of libpq.
    static func copyVersion(boardID: Int64, version: Int) -> PostgresCopyQuery {
        "SELECT user_id, score, achieved_at FROM scores WHERE board_id = \(boardID) AND version = \(Int32(version))"
    }

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

    /// Every entry of a board version, in no particular order, as chunks (`read` collected).
    func entries(boardID: Int64, version: Int, chunkBytes: Int = 4 << 20) async throws -> [[ScoreEntry]] {
        var entries: [[ScoreEntry]] = []
        try await read(boardID: boardID, version: version, chunkBytes: chunkBytes) { chunk in
            entries.append((0..<chunk.count).map { (chunk.userID($0), chunk.score($0), chunk.achievedAt($0)) })
        }
        return entries
    }

    /// Every entry of a board version, in no particular order, handed to `each` in chunks while the rest are read;
    /// returns how many there were.
    ///
    /// One binary `COPY … TO STDOUT` on one connection: PostgreSQL scans the version once and sends it without
    /// building a result set, the connection's loop moves the data into chunks of about `chunkBytes`, and `each`
    /// works on one chunk while the next arrive. Each player appears once (the table's key is board, version,
    /// player). No statement timeout: the copy of a large board takes as long as its size needs; cancelling the
    /// task cancels it.
    @discardableResult
    func read(
        boardID: Int64, version: Int, chunkBytes: Int = 4 << 20, each: (ScoreChunk) async throws -> Void
    ) async throws -> Int {
        try await pool.withConnection { connection in
            try await connection.copyOut(
                Self.copyVersion(boardID: boardID, version: version), timeout: nil, chunkBytes: chunkBytes
            ) { rows in
                try await each(try ScoreChunk(rows))
            }
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
