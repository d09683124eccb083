import RaveMessages
import RavePostgres
import Synchronization

/// Group commit: bets from many callers are settled in one transaction per round instead of one each.
///
/// Units (a bet, or a linked chain) queue on a lane chosen by the user's id; each lane has at most one round in
/// flight, which takes everything queued (up to `maximumBetsPerRound`), settles it in bulk (`BulkRound`, two round
/// trips) or, when that fails, unit by unit under savepoints (`BetEngine`), and commits once. Results are handed
/// back only after COMMIT, so an acknowledged bet is durable. Because all of one user's bets go to one lane and a
/// bet touches only that user's rows (house accounts keep no balance row), two lanes never wait for each other's
/// locks.
final class GroupCommitter: Sendable {
    typealias Completion = CheckedContinuation<[WalletV1.BetResult], any Error>

    private struct Pending {
        var unit: [PreparedBet]
        var completion: Completion
    }

    private struct Lane {
        var queue: [Pending] = []
        var running = false
    }

    let pool: PostgresPool
    let engine: BetEngine
    let bulk: BulkRound
    /// Rounds the bulk path declined or failed, settled unit by unit instead (a gauge of the slow path).
    let unitByUnitRounds = Atomic<Int>(0)
    let maximumBetsPerRound: Int
    private let lanes: Mutex<[Lane]>
    private let laneCount: Int

    init(pool: PostgresPool, engine: BetEngine, laneCount: Int = 4, maximumBetsPerRound: Int = 1_000) {
        self.pool = pool
        self.engine = engine
        bulk = BulkRound(ledger: engine.ledger)
        self.maximumBetsPerRound = maximumBetsPerRound
        self.laneCount = max(1, laneCount)
        lanes = Mutex(Array(repeating: Lane(), count: max(1, laneCount)))
    }

    /// Settles `unit` in the next round of its lane and returns one result per bet once that round committed.
    func settle(_ unit: [PreparedBet]) async throws -> [WalletV1.BetResult] {
        guard let first = unit.first else { return [] }
        let index = Int(first.userID.low % UInt64(laneCount))
        return try await withCheckedThrowingContinuation { continuation in
            let startRound = lanes.withLock { lanes in
                lanes[index].queue.append(Pending(unit: unit, completion: continuation))
                if lanes[index].running { return false }
                lanes[index].running = true
                return true
            }
            if startRound { Task { await self.drain(lane: index) } }
        }
    }

    /// Runs rounds until the lane's queue is empty.
    private func drain(lane index: Int) async {
        while true {
            let batch: [Pending] = lanes.withLock { lanes in
                var taken: [Pending] = []
                var bets = 0
                while let next = lanes[index].queue.first,
                    taken.isEmpty || bets + next.unit.count <= maximumBetsPerRound
                {
                    taken.append(lanes[index].queue.removeFirst())
                    bets += next.unit.count
                }
                if taken.isEmpty { lanes[index].running = false }
                return taken
            }
            if batch.isEmpty { return }
            await runRound(batch)
        }
    }

    /// Settles a round in bulk; when that fails (a declined round, a lock conflict, a lost connection) nothing
    /// of it was acknowledged, so it is settled again unit by unit, where replays answer for whatever committed.
    private func runRound(_ batch: [Pending]) async {
        let units = batch.map(\.unit)
        var outcomes: [Result<[WalletV1.BetResult], any Error>]
        do {
            outcomes = try await pool.withConnection { connection in try await bulk.settle(units, on: connection) }
        } catch {
            unitByUnitRounds.add(1, ordering: .relaxed)
            do {
                outcomes = try await settleUnitByUnit(units)
            } catch {
                // The round did not commit: nothing of it happened, so every caller may retry with the same ids.
                for pending in batch { pending.completion.resume(throwing: error) }
                return
            }
        }
        for (pending, outcome) in zip(batch, outcomes) { pending.completion.resume(with: outcome) }
    }

    /// The round in one transaction, each unit under its own savepoint so a failing unit rolls back alone.
    private func settleUnitByUnit(_ units: [[PreparedBet]]) async throws -> [Result<[WalletV1.BetResult], any Error>] {
        try await pool.transaction { transaction in
            var outcomes: [Result<[WalletV1.BetResult], any Error>] = []
            for unit in units {
                do {
                    outcomes.append(.success(try await engine.settle(unit, on: transaction)))
                } catch {
                    outcomes.append(.failure(error))
                }
            }
            return outcomes
        }
    }
}
