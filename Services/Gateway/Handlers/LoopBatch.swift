import RaveMessages
import RaveRPC
import RaveTransport

extension CallPipeline {
    /// Serves a batch on the client connection's event loop: its calls go out over the loop's backend
    /// connections as they become ready, without a Task per call (or per batch).
    ///
    /// Taken when every call is a player call with the batch's token already cached, or an anonymous call, and
    /// no call is a PlaceBet (bets are merged into one PlaceBets by `BetCoalescer` on the general path). Anything
    /// else, including a batch that does not validate, returns nil before any side effect and takes
    /// `GatewayHandler`, which applies the same rules in the same order.
    func startBatch(
        request: [UInt8], context: RequestContext, loop: EventLoop,
        completion: @escaping (Result<[UInt8], RPCError>) -> Void
    ) -> (() -> Void)? {
        guard let batch = try? GatewayV1.BatchRequest(protobufBytes: request), let plan = try? BatchPlan(batch)
        else { return nil }
        var player: Caller?
        for step in plan.steps {
            guard step.method != BetCoalescer.placeBetMethod, let route = try? route(step.method),
                pools[route.service] != nil
            else { return nil }
            switch route.access {
            case .anonymous:
                continue
            case .player where player == nil:
                guard let authorization = context.metadata[MetadataKey.authorization],
                    let cached = authenticator.cachedCaller(authorization: authorization)
                else { return nil }
                player = playerCaller(cached, isAdmin: context.peer.certificateCommonName == adminCommonName)
            case .player:
                continue
            case .login, .admin:
                return nil
            }
        }
        do throws(RPCError) {
            try protection.admit(context: context, calls: plan.steps.count)
        } catch {
            completion(.failure(error))
            return {}
        }
        do throws(RPCError) {
            for step in plan.steps { try protection.checkSize(step.request.count, method: step.method) }
        } catch {
            protection.release()
            completion(.failure(error))
            return {}
        }
        loopBatches.wrappingAdd(1, ordering: .relaxed)
        let run = LoopBatch(
            pipeline: self, plan: plan, context: context, player: player, loop: loop, completion: completion)
        run.start()
        return { run.cancel() }
    }
}

/// One batch run by `startBatch`: the scheduling state of `BatchRunner`, kept on the loop.
///
/// Every call whose dependencies all succeeded starts at once; a call whose dependency failed is not run; the
/// response lists the results in request order once every call has one.
private final class LoopBatch: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `loop` (calls complete there, retries come back to it).

    private let pipeline: CallPipeline
    private let plan: BatchPlan
    private let context: RequestContext
    private let player: Caller?
    private let loop: EventLoop
    private let completion: (Result<[UInt8], RPCError>) -> Void
    private var results: [GatewayV1.BatchResult?]
    private var started: [Bool]
    private var running: [Int: ProxiedCall] = [:]
    private var unfinished: Int
    private var scanning = false
    private var rescan = false
    private var done = false
    /// The forwarded metadata for player calls and for anonymous calls, built on first use.
    private var playerMetadata: EncodedMetadata?
    private var anonymousMetadata: EncodedMetadata?

    init(
        pipeline: CallPipeline, plan: BatchPlan, context: RequestContext, player: Caller?, loop: EventLoop,
        completion: @escaping (Result<[UInt8], RPCError>) -> Void
    ) {
        self.pipeline = pipeline
        self.plan = plan
        self.context = context
        self.player = player
        self.loop = loop
        self.completion = completion
        results = Array(repeating: nil, count: plan.steps.count)
        started = Array(repeating: false, count: plan.steps.count)
        unfinished = plan.steps.count
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

    /// Starts every call that became ready and skips every call whose dependency failed, until nothing changes.
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
            for step in plan.steps where !started[step.index] && !done {
                let outcomes = step.dependencies.map { results[$0] }
                if let failed = outcomes.firstIndex(where: { $0 != nil && $0?.code != .ok }) {
                    started[step.index] = true
                    record(BatchRunner.dependencyFailed(step, on: plan.steps[step.dependencies[failed]]), of: step)
                } else if outcomes.allSatisfy({ $0 != nil }) {
                    started[step.index] = true
                    dispatch(step)
                }
            }
        } while rescan && !done
        scanning = false
        if unfinished == 0 && !done { respond() }
    }

    /// Routes and sends one call, as `CallPipeline.dispatch` does for the general path.
    private func dispatch(_ step: BatchPlan.Step) {
        do throws(RPCError) {
            var responses: [Int: [UInt8]] = [:]
            for dependency in step.dependencies { responses[dependency] = results[dependency]?.response }
            let request = try step.request(copyingFrom: responses)
            let route = try pipeline.route(step.method)
            guard let pool = pipeline.pools[route.service] else {
                throw .unimplemented("no service serves rave.\(route.service).v1 (method \(step.method))")
            }
            let caller = route.access == .player ? player : nil
            if let caller, !caller.userID.isEmpty { try pipeline.protection.users.charge(caller.userID, cost: 1) }
            guard context.deadline > monotonicNanoseconds() &+ pipeline.deadlineMargin else {
                throw RPCError(.deadlineExceeded, "too little time was left to call \(route.service)")
            }
            let call = ProxiedCall(
                pool: pool, protection: pipeline.protection, loop: loop, method: step.method, request: request,
                metadata: metadata(for: caller), deadline: context.deadline - pipeline.deadlineMargin,
                releasesProtection: false,
                board: pipeline.boardRouting(service: route.service, request: request, caller: caller)
            ) { [self] result in
                running[step.index] = nil
                switch result {
                case .success(let response):
                    var result = GatewayV1.BatchResult()
                    result.name = step.name
                    result.response = response
                    record(result, of: step)
                case .failure(let error):
                    record(GatewayV1.BatchResult(name: step.name, error: error), of: step)
                }
                scan()
            }
            running[step.index] = call
            call.start()
        } catch {
            record(GatewayV1.BatchResult(name: step.name, error: error), of: step)
        }
    }

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

    private func record(_ result: GatewayV1.BatchResult, of step: BatchPlan.Step) {
        guard results[step.index] == nil else { return }
        results[step.index] = result
        unfinished -= 1
    }

    private func respond() {
        done = true
        pipeline.protection.release()
        var response = GatewayV1.BatchResponse()
        response.results = results.enumerated().map { index, result in
            result ?? BatchRunner.dependencyFailed(plan.steps[index], on: plan.steps[index])
        }
        completion(.success(response.protobufBytes()))
    }
}
