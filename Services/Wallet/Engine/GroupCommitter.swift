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
    typealias Outcome = Result<[WalletV1.BetResult], any Error>

    private struct Pending {
        var unit: [PreparedBet]
        /// Called once, after the unit's round committed (or failed as a whole).
        var complete: @Sendable (Outcome) -> Void
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
    /// Rounds settled a second time in bulk because they held a replayed bet id.
    let replayRetries = Atomic<Int>(0)
    /// Rounds run so far: bets settled divided by this is the mean round size.
    let roundsRun = Atomic<Int>(0)
    let maximumBetsPerRound: Int
    private let lanes: Mutex<[Lane]>
    let laneCount: Int

    /// Lanes when `RAVE_WALLET_LANES` is unset: two fill each round with twice the bets of four under a batch load,
    /// spreading a round's fixed statements and commit (docs/wallet.md, "Group commit").
    static let defaultLaneCount = 2

    init(
        pool: PostgresPool, engine: BetEngine, laneCount: Int = defaultLaneCount, maximumBetsPerRound: Int = 1_000
    ) {
        self.pool = pool
        self.engine = engine
        bulk = BulkRound(ledger: engine.ledger)
        self.maximumBetsPerRound = maximumBetsPerRound
        self.laneCount = max(1, laneCount)
        lanes = Mutex(Array(repeating: Lane(), count: max(1, laneCount)))
    }

    /// Settles `unit` in the next round of its lane and returns one result per bet once that round committed.
    func settle(_ unit: [PreparedBet]) async throws -> [WalletV1.BetResult] {
        guard !unit.isEmpty else { return [] }
        return try await withCheckedThrowingContinuation { continuation in
            enqueue([Pending(unit: unit) { continuation.resume(with: $0) }])
        }
    }

    /// Settles each of `units` (one PlaceBets call's) like `settle(_:)`; outcomes come back in their order.
    ///
    /// The units are queued at once and awaited together: one suspension per call instead of a task and a
    /// suspension per unit.
    func settle(units: [[PreparedBet]]) async -> [Outcome] {
        guard !units.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            let collector = Collector(count: units.count, continuation: continuation)
            enqueue(
                units.enumerated().map { position, unit in
                    Pending(unit: unit) { collector.record($0, at: position) }
                })
        }
    }

    /// Gathers the outcomes of one `settle(units:)` call and resumes it when the last one arrives.
    private final class Collector: Sendable {
        private struct State {
            var outcomes: [Outcome?]
            var remaining: Int
            var continuation: CheckedContinuation<[Outcome], Never>?
        }

        private let state: Mutex<State>

        init(count: Int, continuation: CheckedContinuation<[Outcome], Never>) {
            state = Mutex(
                State(
                    outcomes: Array(repeating: nil, count: count), remaining: count, continuation: continuation))
        }

        func record(_ outcome: Outcome, at position: Int) {
            let finished: (CheckedContinuation<[Outcome], Never>, [Outcome])? = state.withLock { state in
                state.outcomes[position] = outcome
                state.remaining -= 1
                guard state.remaining == 0, let continuation = state.continuation else { return nil }
                state.continuation = nil
                return (continuation, state.outcomes.compactMap { $0 })
            }
            if let (continuation, outcomes) = finished { continuation.resume(returning: outcomes) }
        }
    }

    /// Appends to the lanes of the units' users under one lock and starts a round on every idle lane touched.
    private func enqueue(_ pending: [Pending]) {
        let idle: [Int] = lanes.withLock { lanes in
            var started: [Int] = []
            for item in pending {
                let index = lane(of: item.unit)
                lanes[index].queue.append(item)
                if !lanes[index].running {
                    lanes[index].running = true
                    started.append(index)
                }
            }
            return started
        }
        // Unowned on purpose, and bounded: a lane's round runs only while callers wait for its results (they are
        // suspended in `settle`), and ends when the lane's queue is empty. The RPC server drains every call before
        // the pool closes, so no round outlives the callers that own it.
        for index in idle { Task { await self.drain(lane: index) } }
    }

    private func lane(of unit: [PreparedBet]) -> Int {
        Int((unit.first?.userID.low ?? 0) % UInt64(laneCount))
    }

    /// Runs rounds until the lane's queue is empty.
    private func drain(lane index: Int) async {
        while true {
            let batch: [Pending] = lanes.withLock { lanes in
                // Taken as one prefix: removing the queue's head one unit at a time moved the rest each time.
                var end = 0
                var bets = 0
                while end < lanes[index].queue.count,
                    end == 0 || bets + lanes[index].queue[end].unit.count <= maximumBetsPerRound
                {
                    bets += lanes[index].queue[end].unit.count
                    end += 1
                }
                if end == 0 { lanes[index].running = false }
                let taken = Array(lanes[index].queue[..<end])
                lanes[index].queue.removeFirst(end)
                return taken
            }
            if batch.isEmpty { return }
            roundsRun.add(1, ordering: .relaxed)
            await runRound(batch)
        }
    }

    /// Settles a round in bulk; when that fails (a declined round, a lock conflict, a lost connection) nothing
    /// of it was acknowledged, so it is settled again unit by unit, where replays answer for whatever committed.
    private func runRound(_ batch: [Pending]) async {
        let units = batch.map(\.unit)
        var outcomes: [Result<[WalletV1.BetResult], any Error>]
        do {
            outcomes = try await settleInBulk(units)
        } catch {
            unitByUnitRounds.add(1, ordering: .relaxed)
            do {
                outcomes = try await settleUnitByUnit(units)
            } catch {
                // The round did not commit: nothing of it happened, so every caller may retry with the same ids.
                for pending in batch { pending.complete(.failure(error)) }
                return
            }
        }
        for (pending, outcome) in zip(batch, outcomes) { pending.complete(outcome) }
    }

    /// The round in bulk, looking for replays only when needed.
    ///
    /// The first attempt does not look for them (`BulkRound.settle(_:on:lookingForReplays:)`); a round that held
    /// one fails on the stored id and is settled in bulk again, looking for them.
    private func settleInBulk(_ units: [[PreparedBet]]) async throws -> [Result<[WalletV1.BetResult], any Error>] {
        do {
            return try await pool.withConnection { connection in
                try await bulk.settle(units, on: connection, lookingForReplays: false)
            }
        } catch let error where BulkRound.isReplay(error) {
            replayRetries.add(1, ordering: .relaxed)
            return try await pool.withConnection { connection in try await bulk.settle(units, on: connection) }
        }
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
