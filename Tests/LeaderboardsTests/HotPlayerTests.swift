import RaveMessages
import RavePostgres
import Testing

@testable import Leaderboards

@Suite("Concurrent submits for the same players")
struct HotPlayerTests {
    @Test("concurrent batches that touch the same players neither deadlock nor lose the best score")
    func concurrentBatchesOnHotPlayersDoNotDeadlock() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("hot")
            let players = (0..<3).map { _ in RaveID.random() }
            // Many submitters on a few players: batches committing concurrently lock the same rows.
            let failures = await withTaskGroup(of: Int.self) { group in
                for task in 0..<64 {
                    group.addTask {
                        var failed = 0
                        for round in 0..<20 {
                            let player = players[(task + round) % players.count]
                            do {
                                try await service.submit(Int64(task * 100 + round), by: player, to: "hot")
                            } catch {
                                failed += 1
                            }
                        }
                        return failed
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(failures == 0)
            let rows = try await pool.query("SELECT max(score) AS best FROM scores")
            #expect(try rows.first?.decode(Int64.self, column: "best") == 63 * 100 + 19)
        }
    }
}
