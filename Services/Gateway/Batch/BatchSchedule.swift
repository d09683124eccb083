import RaveMessages
import RaveRPC

/// The state of one batch's run, and the rule of when its calls run.
///
/// A call starts once every call it depends on succeeded, and is skipped (never run) once one of them failed.
/// Pure; both batch paths drive it
/// (`BatchRunner` with child tasks, `LoopBatch` on a connection's loop).
struct BatchSchedule: Sendable {
    let plan: BatchPlan
    /// Each call's result once it has one, in request order.
    private(set) var results: [GatewayV1.BatchResult?]
    /// Whether each call was handed out by `readyCalls()` or skipped.
    private var decided: [Bool]
    private var unfinished: Int

    init(plan: BatchPlan) {
        self.plan = plan
        results = Array(repeating: nil, count: plan.steps.count)
        decided = Array(repeating: false, count: plan.steps.count)
        unfinished = plan.steps.count
    }

    /// Whether every call has a result.
    var isComplete: Bool { unfinished == 0 }

    /// The calls that can start now, each handed out once.
    ///
    /// Calls whose dependency failed get their skip result here, which may in turn skip their own dependants.
    mutating func readyCalls() -> [BatchPlan.Step] {
        var ready: [BatchPlan.Step] = []
        var skippedAny: Bool
        repeat {
            skippedAny = false
            for step in plan.steps where !decided[step.index] {
                if let failed = step.dependencies.first(where: { results[$0].map { $0.code != .ok } ?? false }) {
                    decided[step.index] = true
                    record(Self.dependencyFailed(step, on: plan.steps[failed]), at: step.index)
                    skippedAny = true
                } else if step.dependencies.allSatisfy({ results[$0] != nil }) {
                    decided[step.index] = true
                    ready.append(step)
                }
            }
        } while skippedAny
        return ready
    }

    /// Records the result of call `index`; a second result for the same call is ignored.
    mutating func record(_ result: GatewayV1.BatchResult, at index: Int) {
        guard results[index] == nil else { return }
        results[index] = result
        unfinished -= 1
    }

    /// The responses of `step`'s dependencies, by call index, for copying its references.
    func responses(for step: BatchPlan.Step) -> [Int: [UInt8]] {
        var responses: [Int: [UInt8]] = [:]
        for dependency in step.dependencies { responses[dependency] = results[dependency]?.response }
        return responses
    }

    /// The batch's answer: every call's result in request order (a call left without one, which only a
    /// cancelled run can leave, reads as not run).
    var response: GatewayV1.BatchResponse {
        var response = GatewayV1.BatchResponse()
        response.results = results.enumerated().map { index, result in
            result ?? Self.dependencyFailed(plan.steps[index], on: plan.steps[index])
        }
        return response
    }

    /// The fixed message prefix of a call skipped because a dependency failed (code ABORTED,
    /// `dependency_failed` true).
    static let dependencyFailedMessage = "not run: a call it depends on failed"

    static func dependencyFailed(_ step: BatchPlan.Step, on dependency: BatchPlan.Step) -> GatewayV1.BatchResult {
        var result = GatewayV1.BatchResult()
        result.name = step.name
        result.code = .aborted
        result.message = "\(dependencyFailedMessage) (\"\(dependency.name)\")"
        result.dependencyFailed = true
        return result
    }
}
