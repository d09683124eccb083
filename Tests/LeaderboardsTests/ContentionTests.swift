import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Leaderboards

/// Many submits to one board at once: each answers with the caller's standing (never ABORTED, INTERNAL or
/// UNAVAILABLE), and the board holds every player's best once.
@Suite("Contention on one board")
struct LeaderboardsContentionTests {
    static let crowd = 200

    @Test("200 players submitting to one board at once: every submit answers, every player is on the board once")
    func concurrentSubmitsOfACrowdToOneBoard() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("crowd")
            let players = (0..<Self.crowd).map { _ in RaveID.random() }
            let results = await ConcurrentCalls.run(Self.crowd) { index in
                try await service.submit(Int64(index + 1), by: players[index], to: "crowd")
            }
            #expect(ConcurrentCalls.failures(results) == [:], "submits")
            #expect(results.allSatisfy { (try? $0.get())?.newBest == true })
            let stored = try await pool.query("SELECT count(*) AS n, max(score) AS best FROM scores")
            #expect(try stored.first?.decode(Int.self, column: "n") == Self.crowd)
            #expect(try stored.first?.decode(Int64.self, column: "best") == Int64(Self.crowd))
            let best = try await service.submit(0, by: players[Self.crowd - 1], to: "crowd")
            #expect(best.globalPosition == 1 && best.highScore == Int64(Self.crowd))
        }
    }

    @Test("one player submitting 200 scores at once: every submit answers and the best is kept")
    func concurrentSubmitsOfOnePlayer() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("solo")
            let player = RaveID.random()
            let results = await ConcurrentCalls.run(Self.crowd) { index in
                try await service.submit(Int64(index + 1), by: player, to: "solo")
            }
            #expect(ConcurrentCalls.failures(results) == [:], "submits")
            let stored = try await pool.query("SELECT count(*) AS n, max(score) AS best FROM scores")
            #expect(try stored.first?.decode(Int.self, column: "n") == 1)
            #expect(try stored.first?.decode(Int64.self, column: "best") == Int64(Self.crowd))
        }
    }
}
