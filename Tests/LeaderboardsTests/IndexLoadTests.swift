import RavePostgres
import Testing

@testable import Leaderboards

@Suite("Loading a board version by binary COPY")
struct IndexLoadTests {
    @Test("a version copied in small chunks returns every entry exactly once, and no other board's")
    func copiedChunksReturnEveryEntryOnce() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("loaded")
            try await service.define("neighbour")
            let loaded = try await service.engine.board(appID: service.app, key: "loaded")
            let neighbour = try await service.engine.board(appID: service.app, key: "neighbour")
            // Random ids, random scores with many ties, and a second board sharing the key space.
            for board in [loaded.boardID, neighbour.boardID] {
                try await pool.query(
                    PostgresQuery(
                        """
                        INSERT INTO scores (board_id, version, user_id, score, achieved_at)
                        SELECT $1, 1, gen_random_uuid(), (random() * 50)::int8,
                               timestamptz '2026-01-01' + (random() * 1000)::int8 * interval '1 microsecond'
                        FROM generate_series(1, 3000)
                        """, [board]))
            }
            // Chunks of at least 4096 bytes: about 90 entries of 46 bytes each.
            let chunks = try await ScoreStore(pool: pool).entries(boardID: loaded.boardID, version: 1, chunkBytes: 4096)
            let entries = chunks.flatMap { $0 }
            #expect(chunks.count > 4)
            #expect(entries.count == 3000)
            #expect(Set(entries.map(\.userID)).count == 3000)

            let table = try await pool.query(
                PostgresQuery(
                    """
                    SELECT user_id, score, achieved_at FROM scores WHERE board_id = $1
                    ORDER BY score DESC, achieved_at, user_id
                    """, [loaded.boardID]))
            let expected = try table.map {
                (
                    try $0.decode(RaveID.self, at: 0), try $0.decode(Int64.self, at: 1),
                    try $0.decode(PostgresTimestamp.self, at: 2).microsecondsSinceEpoch
                )
            }
            let ranked = RankIndex(ascending: false, chunks: chunks).scores(from: 1, limit: 3000)
            #expect(ranked.map(\.userID) == expected.map(\.0))
            #expect(ranked.map(\.score) == expected.map(\.1))
            #expect(ranked.map(\.achievedAt) == expected.map(\.2))

            // The same chunks streamed into a builder while they are read, as the service loads a board.
            var builder = RankIndexBuilder(ascending: false)
            let read = try await ScoreStore(pool: pool).read(boardID: loaded.boardID, version: 1, chunkBytes: 4096) {
                builder.add($0)
            }
            #expect(read == 3000)
            let streamed = await builder.build().scores(from: 1, limit: 3001)
            #expect(streamed == ranked)
        }
    }

    @Test("a restarted engine loads exactly the index the live one held: ties, improvements, both directions")
    func restartedEngineLoadsTheSameIndex() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("high")
            try await service.define("low", ascending: true)
            let users = (0..<400).map { _ in RaveID.random() }
            for round in 0..<3 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (offset, user) in users.enumerated() {
                        // Few distinct scores and shared instants: ties on score and on time.
                        let score = Int64((offset * 7 + round * 3) % 23) - 11
                        group.addTask {
                            try await service.submit(score, by: user, to: "high")
                            try await service.submit(score, by: user, to: "low")
                        }
                    }
                    try await group.waitForAll()
                }
                service.clock.advance(by: 1000)
            }
            let restarted = LeaderboardEngine(pool: pool, clock: service.clock.wallClock)
            for key in ["high", "low"] {
                let board = try await service.engine.board(appID: service.app, key: key)
                let live = try await service.engine.currentIndex(of: board).read {
                    $0.scores(from: 1, limit: users.count + 1)
                }
                let loaded = try await restarted.currentIndex(of: board).read {
                    $0.scores(from: 1, limit: users.count + 1)
                }
                #expect(live.count == users.count)
                #expect(loaded == live)
                for user in users.prefix(50) {
                    #expect(
                        try await restarted.standing(of: user, in: board)
                            == (try await service.engine.standing(of: user, in: board)))
                }
            }
        }
    }
}
