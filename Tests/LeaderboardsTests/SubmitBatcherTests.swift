import RavePostgres
import RaveRuntime
import RaveTestSupport
import Synchronization
import Testing

@testable import Leaderboards

@Suite("Group commit: batches, retries and failed commits")
struct SubmitBatcherTests {
    /// Commits whose first `gated` batches wait for a gate each (writes submitted meanwhile queue into the next
    /// batch); batch number `failing` throws instead of writing.
    final class GatedCommits: Sendable {
        let gates: [ShutdownLatch]
        let batches = Mutex<[[ScoreWrite]]>([])
        let failing: Int?
        let store: ScoreStore

        init(store: ScoreStore, gated: Int, failing: Int? = nil) {
            gates = (0..<gated).map { _ in ShutdownLatch() }
            self.store = store
            self.failing = failing
        }

        func commit(_ batch: [ScoreWrite]) async throws {
            let number = batches.withLock { batches in
                batches.append(batch)
                return batches.count
            }
            if number <= gates.count { await gates[number - 1].wait() }
            if number == failing { throw LeaderboardsError.unavailable("commit \(number) failed") }
            try await store.write(batch)
        }

        var count: Int { batches.withLock { $0.count } }
    }

    static func write(_ board: BoardDefinition, _ user: RaveID, _ score: Int64, at time: Int64) -> ScoreWrite {
        ScoreWrite(
            boardID: board.boardID, version: 1, userID: user, score: score, achievedAt: time, ascending: board.ascending
        )
    }

    static func stored(_ user: RaveID, in pool: PostgresPool) async throws -> (score: Int64, time: Int64)? {
        let rows = try await pool.query("SELECT score, achieved_at FROM scores WHERE user_id = $1", [user])
        guard let row = rows.first else { return nil }
        #expect(rows.count == 1)
        return (try row.decode(Int64.self, at: 0), try row.decode(PostgresTimestamp.self, at: 1).microsecondsSinceEpoch)
    }

    @Test("a batch holding one player twice, and a retry of the same write, commits the best once and answers all")
    func samePlayerTwiceInOneBatch() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("twice")
            let board = try await service.engine.board(appID: service.app, key: "twice")
            let commits = GatedCommits(store: service.engine.scores, gated: 1)
            let batcher = SubmitBatcher { try await commits.commit($0) }
            let (first, player) = (RaveID.random(), RaveID.random())
            let opening = Task { try await batcher.submit(Self.write(board, first, 1, at: 1)) }
            try await eventually { commits.count == 1 }
            // Queued behind the running commit, so all four go in the next batch: a worse, a better, the same
            // better write again (a client's retry) and the same score reached later.
            let queued = [(10, 5), (30, 6), (30, 6), (30, 7)].map { score, time in
                Task { try await batcher.submit(Self.write(board, player, Int64(score), at: Int64(time))) }
            }
            try await eventually { batcher.queuedWrites == queued.count }
            commits.gates[0].open()
            try await opening.value
            for submit in queued { try await submit.value }
            #expect(commits.batches.withLock { $0.map(\.count) } == [1, 4])
            let row = try await Self.stored(player, in: pool)
            #expect(row?.score == 30 && row?.time == 6)
        }
    }

    @Test("a failed commit fails each of its waiters, and the writes queued behind it still commit")
    func failedCommitFailsItsWaitersAndLosesNothingQueued() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("failing")
            let board = try await service.engine.board(appID: service.app, key: "failing")
            let commits = GatedCommits(store: service.engine.scores, gated: 2, failing: 2)
            let batcher = SubmitBatcher(maximumConcurrentCommits: 1) { try await commits.commit($0) }
            let opening = RaveID.random()
            let failed = (0..<3).map { _ in RaveID.random() }
            let later = (0..<3).map { _ in RaveID.random() }
            func submit(_ users: [RaveID]) -> [Task<Void, any Error>] {
                users.map { user in Task { try await batcher.submit(Self.write(board, user, 2, at: 2)) } }
            }
            let first = submit([opening])
            try await eventually { commits.count == 1 }
            let doomed = submit(failed)
            try await eventually { batcher.queuedWrites == failed.count }
            commits.gates[0].open()
            try await eventually { commits.count == 2 }
            let next = submit(later)
            try await eventually { batcher.queuedWrites == later.count }
            commits.gates[1].open()
            try await first[0].value
            for submit in doomed { await #expect(throws: LeaderboardsError.self) { try await submit.value } }
            for submit in next { try await submit.value }
            #expect(commits.batches.withLock { $0.map(\.count) } == [1, 3, 3])
            for user in [opening] + later { #expect(try await Self.stored(user, in: pool)?.score == 2) }
            for user in failed { #expect(try await Self.stored(user, in: pool) == nil) }
        }
    }
}
