import RaveDynamic
import RaveMessages
import RaveRPC

/// Runs a validated batch: every call whose dependencies succeeded starts at once, a call whose dependency
/// failed is not run, and results come back in request order.
///
/// The scheduling state lives in this one function (no locks): it starts ready calls as child tasks, and
/// each finished call may make others ready.
struct BatchRunner: Sendable {
    /// The fixed message prefix of a call skipped because a dependency failed (code ABORTED,
    /// `dependency_failed` true).
    static let dependencyFailedMessage = "not run: a call it depends on failed"

    /// Runs one call, given the encoded responses of its dependencies by index, and returns its result
    /// (never throws: a failure is a status).
    let execute: @Sendable (BatchPlan.Step, [Int: [UInt8]]) async -> GatewayV1.BatchResult

    func run(_ plan: BatchPlan) async -> [GatewayV1.BatchResult] {
        var results = [GatewayV1.BatchResult?](repeating: nil, count: plan.steps.count)
        var waiting = plan.steps
        await withTaskGroup(of: GatewayV1.BatchResult.self) { group in
            var running = 0
            while true {
                var stillWaiting: [BatchPlan.Step] = []
                var progressed = false
                for step in waiting {
                    let outcomes = step.dependencies.map { results[$0] }
                    if let failed = outcomes.firstIndex(where: { $0 != nil && $0?.code != .ok }) {
                        results[step.index] = Self.dependencyFailed(step, on: plan.steps[step.dependencies[failed]])
                        progressed = true
                    } else if outcomes.allSatisfy({ $0 != nil }) {
                        var responses: [Int: [UInt8]] = [:]
                        for dependency in step.dependencies { responses[dependency] = results[dependency]?.response }
                        group.addTask { [responses] in await execute(step, responses) }
                        running += 1
                    } else {
                        stillWaiting.append(step)
                    }
                }
                waiting = stillWaiting
                // A skipped call may unblock (by failing) its own dependants: rescan before waiting.
                if progressed { continue }
                guard running > 0, let finished = await group.next() else { break }
                running -= 1
                if let index = plan.steps.firstIndex(where: { $0.name == finished.name }) {
                    results[index] = finished
                }
            }
        }
        return results.enumerated().map { index, result in
            result ?? Self.dependencyFailed(plan.steps[index], on: plan.steps[index])
        }
    }

    private static func dependencyFailed(_ step: BatchPlan.Step, on dependency: BatchPlan.Step) -> GatewayV1.BatchResult
    {
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
