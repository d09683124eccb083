import RaveMessages
import RaveRPC
import RaveTransport

extension CallPipeline {
    /// Serves a batch on the client connection's event loop: its calls go out over the loop's backend
    /// connections as they become ready, without a Task per call (or per batch).
    ///
    /// Taken when every call's token is known without waiting (a player call whose token is cached, or an
    /// anonymous call) and no call is a PlaceBet (bets are merged into one PlaceBets by `BetCoalescer` on the
    /// general path). Anything else, including a batch that does not validate, returns nil before any side effect
    /// and takes `GatewayHandler`. Both paths admit each call with `CallAdmission` and schedule with
    /// `BatchSchedule`.
    func startBatch(
        request: [UInt8], context: RequestContext, loop: EventLoop,
        completion: @escaping (Result<[UInt8], RPCError>) -> Void
    ) -> (() -> Void)? {
        guard let batch = try? GatewayV1.BatchRequest(protobufBytes: request), let plan = try? BatchPlan(batch)
        else { return nil }
        var calls: [(route: MethodRoute, token: CallToken)] = []
        calls.reserveCapacity(plan.steps.count)
        for step in plan.steps {
            guard step.method != BetCoalescer.placeBetMethod, let route = try? route(step.method),
                let token = cachedToken(for: route, context: context)
            else { return nil }
            calls.append((route, token))
        }
        do throws(RPCError) {
            try protection.admit(context: context, requestSizes: plan.callSizes)
        } catch {
            completion(.failure(error))
            return {}
        }
        loopBatches.wrappingAdd(1, ordering: .relaxed)
        let run = LoopBatch(
            pipeline: self, plan: plan, calls: calls, context: context, loop: loop, completion: completion)
        run.start()
        return { run.cancel() }
    }
}

/// One batch run by `startBatch`: its `BatchSchedule`, kept on the loop.
private final class LoopBatch: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `loop` (calls complete there, retries come back to it).

    private let pipeline: CallPipeline
    private var schedule: BatchSchedule
    /// Each call's route and token, resolved when the batch was taken.
    private let calls: [(route: MethodRoute, token: CallToken)]
    private let context: RequestContext
    private let loop: EventLoop
    private let completion: (Result<[UInt8], RPCError>) -> Void
    private var running: [Int: ProxiedCall] = [:]
    private var scanning = false
    private var rescan = false
    private var done = false
    /// The forwarded metadata for player calls and for anonymous calls, built on first use.
    private var playerMetadata: EncodedMetadata?
    private var anonymousMetadata: EncodedMetadata?

    init(
        pipeline: CallPipeline, plan: BatchPlan, calls: [(route: MethodRoute, token: CallToken)],
        context: RequestContext, loop: EventLoop, completion: @escaping (Result<[UInt8], RPCError>) -> Void
    ) {
        self.pipeline = pipeline
        self.schedule = BatchSchedule(plan: plan)
        self.calls = calls
        self.context = context
        self.loop = loop
        self.completion = completion
    }

    func start() {
        scan()
    }

    /// Called by the server when the client cancelled or the deadline passed; it answers the client itself.
    func cancel() {
        guard !done else { return }
        done = true
        pipeline.protection.release()
        let calls = running.values
        running.removeAll()
        for call in calls { call.cancel() }
    }

    /// Starts every call the schedule finds ready, until nothing changes.
    ///
    /// A call may complete while it is being started (a refusal before anything is sent), which records its
    /// result and asks for another scan instead of scanning re-entrantly.
    private func scan() {
        guard !scanning else {
            rescan = true
            return
        }
        scanning = true
        repeat {
            rescan = false
            for step in schedule.readyCalls() where !done { dispatch(step) }
        } while rescan && !done
        scanning = false
        if schedule.isComplete && !done { respond() }
    }

    /// Admits and sends one call, as `CallPipeline.dispatch` does for the general path.
    private func dispatch(_ step: BatchPlan.Step) {
        do throws(RPCError) {
            let request = try step.request(copyingFrom: schedule.responses(for: step))
            let (route, token) = calls[step.index]
            let admitted = try pipeline.admission.decide(
                method: step.method, route: route, role: context.peer.role, token: token,
                deadline: context.deadline, now: monotonicNanoseconds()
            ).get()
            if let user = admitted.chargedUser { try pipeline.protection.users.charge(user, cost: 1) }
            let call = ProxiedCall(
                pool: admitted.backend, protection: pipeline.protection, loop: loop, method: step.method,
                request: request, metadata: metadata(for: admitted.caller), deadline: admitted.backendDeadline,
                releasesProtection: false, boardOwners: pipeline.boardOwners(for: admitted.service),
                appID: admitted.caller?.appID ?? "", traffic: pipeline.traffic
            ) { [self] result in
                running[step.index] = nil
                switch result {
                case .success(let response):
                    var result = GatewayV1.BatchResult()
                    result.name = step.name
                    result.response = response
                    schedule.record(result, at: step.index)
                case .failure(let error):
                    schedule.record(GatewayV1.BatchResult(name: step.name, error: error), at: step.index)
                }
                scan()
            }
            running[step.index] = call
            call.start()
        } catch {
            schedule.record(GatewayV1.BatchResult(name: step.name, error: error), at: step.index)
            rescan = true
        }
    }

    /// The forwarded metadata of a call: every player call of a batch has the same caller.
    private func metadata(for caller: Caller?) -> EncodedMetadata {
        if caller == nil {
            if let anonymousMetadata { return anonymousMetadata }
            let metadata = pipeline.forwardedMetadata(context, caller: nil, removing: CallPipeline.batchStrippedKeys)
            anonymousMetadata = metadata
            return metadata
        }
        if let playerMetadata { return playerMetadata }
        let metadata = pipeline.forwardedMetadata(context, caller: caller, removing: CallPipeline.batchStrippedKeys)
        playerMetadata = metadata
        return metadata
    }

    private func respond() {
        done = true
        pipeline.protection.release()
        completion(.success(schedule.response.protobufBytes()))
    }
}
