import RaveDynamic
import RaveMessages
import RaveRPC

/// Runs a validated batch: every call whose dependencies succeeded starts at once, a call whose dependency
/// failed is not run, and results come back in request order.
///
/// The scheduling state lives in this one function (no locks): it starts ready calls as child tasks, and
/// each finished call may make others ready. Calls that `runsTogether` accepts and that become ready in the
/// same scan are handed to `executeTogether` as one group (the bets of a batch, for one PlaceBets call).
struct BatchRunner: Sendable {
    /// A call whose dependencies all succeeded, with their encoded responses by index.
    struct ReadyCall: Sendable {
        var step: BatchPlan.Step
        var responses: [Int: [UInt8]]
    }

    /// The fixed message prefix of a call skipped because a dependency failed (code ABORTED,
    /// `dependency_failed` true).
    static let dependencyFailedMessage = "not run: a call it depends on failed"

    /// Runs one call and returns its result (never throws: a failure is a status).
    let execute: @Sendable (ReadyCall) async -> GatewayV1.BatchResult
    /// Whether a call may share one backend call with others of its kind that are ready at the same time.
    var runsTogether: @Sendable (BatchPlan.Step) -> Bool = { _ in false }
    /// Runs two or more calls accepted by `runsTogether`; one result per call, in the order given.
    var executeTogether: (@Sendable ([ReadyCall]) async -> [GatewayV1.BatchResult])?

    init(execute: @escaping @Sendable (ReadyCall) async -> GatewayV1.BatchResult) {
        self.execute = execute
    }

    init(
        execute: @escaping @Sendable (ReadyCall) async -> GatewayV1.BatchResult,
        runsTogether: @escaping @Sendable (BatchPlan.Step) -> Bool,
        executeTogether: @escaping @Sendable ([ReadyCall]) async -> [GatewayV1.BatchResult]
    ) {
        self.execute = execute
        self.runsTogether = runsTogether
        self.executeTogether = executeTogether
    }

    func run(_ plan: BatchPlan) async -> [GatewayV1.BatchResult] {
        var results = [GatewayV1.BatchResult?](repeating: nil, count: plan.steps.count)
        var waiting = plan.steps
        await withTaskGroup(of: [(Int, GatewayV1.BatchResult)].self) { group in
            var running = 0
            while true {
                var stillWaiting: [BatchPlan.Step] = []
                var progressed = false
                var ready: [ReadyCall] = []
                for step in waiting {
                    let outcomes = step.dependencies.map { results[$0] }
                    if let failed = outcomes.firstIndex(where: { $0 != nil && $0?.code != .ok }) {
                        results[step.index] = Self.dependencyFailed(step, on: plan.steps[step.dependencies[failed]])
                        progressed = true
                    } else if outcomes.allSatisfy({ $0 != nil }) {
                        var responses: [Int: [UInt8]] = [:]
                        for dependency in step.dependencies { responses[dependency] = results[dependency]?.response }
                        ready.append(ReadyCall(step: step, responses: responses))
                    } else {
                        stillWaiting.append(step)
                    }
                }
                waiting = stillWaiting
                running += start(ready, in: &group)
                // A skipped call may unblock (by failing) its own dependants: rescan before waiting.
                if progressed { continue }
                guard running > 0, let finished = await group.next() else { break }
                running -= 1
                for (index, result) in finished { results[index] = result }
            }
        }
        return results.enumerated().map { index, result in
            result ?? Self.dependencyFailed(plan.steps[index], on: plan.steps[index])
        }
    }

    /// Starts the ready calls as child tasks, those that run together as one; returns the number of tasks.
    private func start(
        _ ready: [ReadyCall], in group: inout TaskGroup<[(Int, GatewayV1.BatchResult)]>
    ) -> Int {
        var together: [ReadyCall] = []
        var tasks = 0
        for call in ready {
            if executeTogether != nil && runsTogether(call.step) {
                together.append(call)
            } else {
                group.addTask { [execute] in [(call.step.index, await execute(call))] }
                tasks += 1
            }
        }
        if together.count == 1, let call = together.first {
            group.addTask { [execute] in [(call.step.index, await execute(call))] }
            tasks += 1
        } else if let executeTogether, together.count > 1 {
            group.addTask { [together] in
                let results = await executeTogether(together)
                return zip(together, results).map { ($0.step.index, $1) }
            }
            tasks += 1
        }
        return tasks
    }

    static func dependencyFailed(_ step: BatchPlan.Step, on dependency: BatchPlan.Step) -> GatewayV1.BatchResult {
        var result = GatewayV1.BatchResult()
        result.name = step.name
        result.code = .aborted
        result.message = "\(dependencyFailedMessage) (\"\(dependency.name)\")"
        result.dependencyFailed = true
        return result
    }
}

extension BatchPlan.Step {
    /// The request with every reference's value copied in from the responses of earlier calls.
    ///
    /// Fails with FAILED_PRECONDITION when a source response lacks the element a path names (an index past the
    /// end of a list), which validation could not know.
    func request(copyingFrom responses: [Int: [UInt8]]) throws(RPCError) -> [UInt8] {
        var request = self.request
        for reference in references {
            do {
                let value = try reference.from.value(inProtobufBytes: responses[reference.source] ?? [])
                request = try reference.to.setValue(value, inProtobufBytes: request)
            } catch {
                throw .failedPrecondition("call \"\(name)\": copying \(reference.from.path) failed: \(error.message)")
            }
        }
        return request
    }
}

extension GatewayV1.BatchResult {
    /// The result of a call named `name` that failed with `error`.
    init(name: String, error: RPCError) {
        self.init()
        self.name = name
        code = error.code
        message = error.message
        details = error.details
    }
}
