import RaveCrypto
import RavePostgres
import Testing

@testable import Leaderboards

@Suite("Group-commit batches: parameters, statements, and the index update")
struct ScoreBatchTests {
    @Test("batches of one direction and of both keep each board's better score, ties to the earlier time")
    func batchesOfEitherOrBothDirectionsKeepTheBetterScore() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("low", ascending: true)
            try await service.define("high")
            let lowBoard = try await service.engine.board(appID: service.app, key: "low")
            let highBoard = try await service.engine.board(appID: service.app, key: "high")
            let players = (0..<4).map { _ in RaveID.random() }
            func write(_ board: BoardDefinition, _ player: Int, _ score: Int64, at time: Int64) -> ScoreWrite {
                ScoreWrite(
                    boardID: board.boardID, version: 1, userID: players[player], score: score, achievedAt: time,
                    ascending: board.ascending)
            }
            let store = service.engine.scores
            // Both directions in one batch (new rows), then one direction at a time (updates and no-ops).
            try await store.write([write(lowBoard, 0, 50, at: 10), write(highBoard, 0, 50, at: 10)])
            try await store.write([write(lowBoard, 0, 40, at: 20), write(lowBoard, 1, 7, at: 20)])
            try await store.write([write(highBoard, 0, 40, at: 20), write(highBoard, 1, 7, at: 20)])
            try await store.write([write(lowBoard, 0, 60, at: 30), write(highBoard, 0, 60, at: 30)])
            // The same score reached earlier wins; a later one does not.
            try await store.write([write(lowBoard, 1, 7, at: 5), write(highBoard, 1, 7, at: 25)])
            let rows = try await pool.query(
                "SELECT board_id, user_id, score, achieved_at FROM scores ORDER BY board_id, score")
            var table: [String: (score: Int64, time: Int64)] = [:]
            for row in rows {
                let key = "\(try row.decode(Int64.self, at: 0))/\(try row.decode(RaveID.self, at: 1).hex)"
                table[key] = (
                    try row.decode(Int64.self, at: 2),
                    try row.decode(PostgresTimestamp.self, at: 3).microsecondsSinceEpoch
                )
            }
            func stored(_ board: BoardDefinition, _ player: Int) -> (score: Int64, time: Int64)? {
                table["\(board.boardID)/\(players[player].hex)"]
            }
            #expect(table.count == 4)
            #expect(stored(lowBoard, 0)?.score == 40)
            #expect(stored(highBoard, 0)?.score == 60)
            #expect(stored(lowBoard, 1)?.score == 7 && stored(lowBoard, 1)?.time == 5)
            #expect(stored(highBoard, 1)?.score == 7 && stored(highBoard, 1)?.time == 20)
        }
    }

    @Test("recordStanding answers what record and then standing answer, for both directions")
    func recordStandingMatchesRecordThenStanding() {
        for ascending in [false, true] {
            var random = SplitMix64(seed: ascending ? 7 : 11)
            let players = (0..<300).map { _ in RaveID.random() }
            var combined = RankIndex(ascending: ascending)
            var separate = RankIndex(ascending: ascending)
            for step in 0..<5_000 {
                let player = players[Int.random(in: 0..<players.count, using: &random)]
                // Few distinct scores and times, so ties and equal-score-earlier replacements happen often.
                let score = Int64.random(in: 0..<50, using: &random)
                let time = Int64(step % 97)
                let recorded = combined.recordStanding(userID: player, score: score, achievedAt: time)
                let replaced = separate.record(userID: player, score: score, achievedAt: time)
                #expect(recorded.replaced == replaced)
                #expect(recorded.standing == separate.standing(of: player))
            }
            #expect(combined.scores(from: 1, limit: players.count) == separate.scores(from: 1, limit: players.count))
        }
    }
}
