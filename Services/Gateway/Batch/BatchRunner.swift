import RaveDynamic
import RaveMessages
import RaveRPC

/// Runs a validated batch with child tasks, as `BatchSchedule` says: every call whose dependencies succeeded
/// starts at once, a call whose dependency failed is not run, and results come back in request order.
///
/// The schedule lives in this one function (no locks): it starts ready calls as child tasks, and each finished
/// call may make others ready. Calls that `runsTogether` accepts and that become ready together are handed to
/// `executeTogether` as one group (the bets of a batch, for one PlaceBets call).
struct BatchRunner: Sendable {
    /// A call whose dependencies all succeeded, with their encoded responses by index.
    struct ReadyCall: Sendable {
        var step: BatchPlan.Step
        var responses: [Int: [UInt8]]
    }

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

    func run(_ plan: BatchPlan) async -> GatewayV1.BatchResponse {
        var schedule = BatchSchedule(plan: plan)
        await withTaskGroup(of: [(Int, GatewayV1.BatchResult)].self) { group in
            var running = 0
            while true {
                let ready = schedule.readyCalls().map { ReadyCall(step: $0, responses: schedule.responses(for: $0)) }
                running += start(ready, in: &group)
                guard running > 0, let finished = await group.next() else { break }
                running -= 1
                for (index, result) in finished { schedule.record(result, at: index) }
            }
        }
        return schedule.response
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
