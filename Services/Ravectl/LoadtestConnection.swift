import Foundation
import RaveCrypto
import RaveMessages
import RaveRPC
import RaveTransport
import Synchronization

/// What one connection measured: latencies per operation, and per second of the run for the time chart.
struct LoadtestMeasurements: Sendable {
    var histograms: [LoadtestOperation: LatencyHistogram] = [:]
    var errors: [LoadtestOperation: Int] = [:]
    /// Successful submits that set a new best (the rest were durable no-ops).
    var newBests = 0
    /// Bets settled by measured `.bets` batches whose every bet succeeded.
    var betsPlaced = 0
    /// One histogram per second since the start (warm-up included), all operations together.
    var timeline: [LatencyHistogram] = []
    /// The first few distinct failures, to show what went wrong.
    var sampleErrors: [String] = []

    mutating func merge(_ other: LoadtestMeasurements) {
        for (operation, histogram) in other.histograms {
            histograms[operation, default: LatencyHistogram()].merge(histogram)
        }
        for (operation, count) in other.errors { errors[operation, default: 0] += count }
        newBests += other.newBests
        betsPlaced += other.betsPlaced
        while timeline.count < other.timeline.count { timeline.append(LatencyHistogram()) }
        for (second, histogram) in other.timeline.enumerated() { timeline[second].merge(histogram) }
        for error in other.sampleErrors where sampleErrors.count < 5 && !sampleErrors.contains(error) {
            sampleErrors.append(error)
        }
    }
}

/// One connection's load: a closed loop (`inFlight` chains, each call started when the previous one answers) or
/// an open loop (calls at exponentially spaced intended times, whatever the server does).
///
/// In the open loop a call's latency counts from its *intended* send time, so a server that stalls cannot hide the
/// wait of the calls that queued up behind the stall (no coordinated omission). Everything runs on the
/// connection's event loop with callbacks: no Task or continuation per call, so the generator takes as little of
/// the shared cores as it can.
final class LoadtestConnection: @unchecked Sendable {
    // @unchecked: the mutable fields are touched only on `connection.eventLoop` (`run` hops there first).

    private let connection: RPCConnection
    private let plan: LoadtestPlan
    private let progress: LoadtestProgress
    /// The metadata of every call when the connection acts as one player (`--gateway`); nil picks a seeded player
    /// per call.
    private let caller: [String: String]?
    private var random: SplitMix64
    private var measurements = LoadtestMeasurements()
    private var inFlight = 0
    private var chainsRunning = 0
    private var nextIntended: UInt64 = 0
    private var scheduling = true
    private var finished: CheckedContinuation<LoadtestMeasurements, Never>?

    init(
        connection: RPCConnection, plan: LoadtestPlan, seed: UInt64, progress: LoadtestProgress,
        caller: [String: String]? = nil
    ) {
        self.connection = connection
        self.plan = plan
        self.progress = progress
        self.caller = caller
        random = SplitMix64(seed: seed)
    }

    /// Runs until the plan's end and every call has answered.
    func run() async -> LoadtestMeasurements {
        await withCheckedContinuation { continuation in
            connection.eventLoop.execute { [self] in
                finished = continuation
                if plan.ratePerConnection != nil {
                    nextIntended = plan.start + gap()
                    scheduleNext()
                } else {
                    chainsRunning = plan.inFlight
                    // Every connection starts at the same instant, so the first second is not one connection's.
                    connection.eventLoop.scheduleTimer(at: plan.start) { [self] in
                        for _ in 0..<plan.inFlight { callInChain() }
                    }
                }
            }
        }
    }

    // MARK: - Closed loop

    private func callInChain() {
        let now = monotonicNanoseconds()
        guard now < plan.end, connection.isUsable else {
            chainsRunning -= 1
            return finishIfDone()
        }
        send(intendedAt: now) { [self] in callInChain() }
    }

    // MARK: - Open loop

    /// The time to the next call: exponential gaps make arrivals a Poisson process at the configured rate.
    private func gap() -> UInt64 {
        let rate = plan.ratePerConnection ?? 1
        return UInt64(-log1p(-random.unit()) / rate * 1e9)
    }

    private func scheduleNext() {
        guard nextIntended < plan.end, connection.isUsable else {
            scheduling = false
            return finishIfDone()
        }
        connection.eventLoop.scheduleTimer(at: nextIntended) { [self] in
            // A late timer (a busy loop) sends every call that is due, each timed from its own intended time.
            let now = monotonicNanoseconds()
            while nextIntended <= now && nextIntended < plan.end {
                send(intendedAt: nextIntended) { [self] in finishIfDone() }
                nextIntended += gap()
            }
            scheduleNext()
        }
    }

    // MARK: - Calls

    private func send(intendedAt intended: UInt64, then next: @escaping () -> Void) {
        let user = plan.userSampler.next(&random)
        let board = plan.boardSampler.next(&random)
        let operation = pickOperation()
        let key = plan.boardKeys[board]
        let request: [UInt8]
        switch operation {
        case .submit:
            let score = plan.improvingScore(intendedAt: intended)
            request = LeaderboardsV1.SubmitScoreRequest(leaderboardKey: key, score: score).protobufBytes()
        case .position:
            request = LeaderboardsV1.GetLeaderboardRequest(leaderboardKey: key).protobufBytes()
        case .top:
            request = LeaderboardsV1.GetGlobalScoresRequest(
                leaderboardKey: key, page: 1, pageSize: Int32(plan.pageSize)
            )
            .protobufBytes()
        case .around:
            request = LeaderboardsV1.GetScoresAdjacentRequest(leaderboardKey: key, adjacent: Int32(plan.adjacent))
                .protobufBytes()
        case .friends:
            request = LeaderboardsV1.GetFriendsScoresRequest(leaderboardKey: key, page: 1, pageSize: 25)
                .protobufBytes()
        case .bets:
            request = (plan.bets ?? LoadtestBetBatch()).request(&random)
        }
        let options = CallOptions(
            timeout: .seconds(30),
            metadata: caller ?? [
                MetadataKey.callerUserID: LoadtestPlan.userID(user).hex, MetadataKey.callerAppID: plan.app,
                MetadataKey.callerScopes: "player authenticated",
            ])
        inFlight += 1
        connection.startCall(method: operation.method, request: request, options: options) { [self] result in
            inFlight -= 1
            let done = monotonicNanoseconds()
            record(operation, result, intended: intended, done: done)
            next()
        }
    }

    private func pickOperation() -> LoadtestOperation {
        let total = plan.cumulativeWeights[plan.cumulativeWeights.count - 1].upTo
        let pick = Int(random.next() % UInt64(total))
        for entry in plan.cumulativeWeights where pick < entry.upTo { return entry.operation }
        return plan.cumulativeWeights[0].operation
    }

    private func record(
        _ operation: LoadtestOperation, _ result: Result<[UInt8], RPCError>, intended: UInt64, done: UInt64
    ) {
        let microseconds = (done - min(intended, done)) / 1000
        let second = Int((intended - min(plan.start, intended)) / 1_000_000_000)
        var result = result
        if operation == .bets, case .success(let bytes) = result, let failure = LoadtestBetBatch.failure(in: bytes) {
            result = .failure(failure)
        }
        switch result {
        case .success(let bytes):
            progress.completed.add(1, ordering: .relaxed)
            while measurements.timeline.count <= second { measurements.timeline.append(LatencyHistogram()) }
            measurements.timeline[second].record(microseconds: microseconds)
            guard intended >= plan.measureFrom else { return }
            measurements.histograms[operation, default: LatencyHistogram()].record(microseconds: microseconds)
            if operation == .submit, (try? LeaderboardsV1.SubmitScoreResponse(protobufBytes: bytes))?.newBest == true {
                measurements.newBests += 1
            }
            if operation == .bets { measurements.betsPlaced += plan.bets?.size ?? 0 }
        case .failure(let error):
            progress.failed.add(1, ordering: .relaxed)
            if intended >= plan.measureFrom { measurements.errors[operation, default: 0] += 1 }
            let text = "\(operation.rawValue): \(error)"
            if measurements.sampleErrors.count < 5 && !measurements.sampleErrors.contains(text) {
                measurements.sampleErrors.append(text)
            }
        }
    }

    private func finishIfDone() {
        guard chainsRunning == 0, !(plan.ratePerConnection != nil && scheduling), inFlight == 0 else { return }
        finished?.resume(returning: measurements)
        finished = nil
    }
}

/// Calls answered so far, shared by the connections and the progress printer.
final class LoadtestProgress: Sendable {
    let completed = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
}
