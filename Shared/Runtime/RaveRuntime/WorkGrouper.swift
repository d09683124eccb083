import Synchronization

/// Work that arrives while earlier work runs is done together, in one call of `work`, and every caller resumes with
/// its own part of the answer: group commit, and one database read for the misses of many calls.
///
/// There is no timer: an input arriving while no group runs starts one at once (an idle service answers in one
/// round trip). While groups run, another one starts (up to `maximumConcurrentGroups`) once
/// `minimumConcurrentGroup` inputs wait; otherwise the inputs wait for the next group, which takes everything that
/// queued meanwhile. Groups so grow with the load and the latency of `work` by themselves, and a free slot is not
/// spent on a group of one or two inputs when each call of `work` has a fixed cost (a commit). A full group
/// (`maximumGroup` inputs) starts at once even above the limit.
///
/// `work` gets the inputs in arrival order and answers one output per input, in the same order; when it throws,
/// or answers another number of outputs, every input of the group gets the error, and the inputs queued behind
/// it still run.
public final class WorkGrouper<Input: Sendable, Output: Sendable>: Sendable {
    public typealias Work = @Sendable ([Input]) async throws -> [Output]

    private struct Pending {
        var inputs: [Input] = []
        var waiters: [CheckedContinuation<Output, any Error>] = []
        var groupsRunning = 0
        var inputsRunning = 0
    }

    private struct Group {
        var inputs: [Input]
        var waiters: [CheckedContinuation<Output, any Error>]
    }

    private let state = Mutex(Pending())
    private let work: Work
    private let maximumGroup: Int
    private let maximumConcurrentGroups: Int
    private let minimumConcurrentGroup: Int

    public init(
        maximumGroup: Int = 1024, maximumConcurrentGroups: Int = 1, minimumConcurrentGroup: Int = 1,
        work: @escaping Work
    ) {
        self.maximumGroup = max(1, maximumGroup)
        self.maximumConcurrentGroups = max(1, maximumConcurrentGroups)
        self.minimumConcurrentGroup = max(1, minimumConcurrentGroup)
        self.work = work
    }

    /// Returns `input`'s output once its group ran; throws the group's error if it failed.
    public func submit(_ input: Input) async throws -> Output {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Output, any Error>) in
            let group = state.withLock { pending -> Group? in
                pending.inputs.append(input)
                pending.waiters.append(continuation)
                let starts =
                    pending.groupsRunning == 0 || pending.inputs.count >= maximumGroup
                    || (pending.groupsRunning < maximumConcurrentGroups
                        && pending.inputs.count >= minimumConcurrentGroup)
                guard starts else { return nil }
                pending.groupsRunning += 1
                return Self.take(&pending)
            }
            // Unowned on purpose, and bounded: it runs only while callers wait on it (they are suspended here) and
            // ends when nothing is queued.
            if let group { Task { await self.runUntilIdle(group) } }
        }
    }

    /// Inputs waiting for a group to take them.
    public var queued: Int { state.withLock { $0.inputs.count } }

    /// Inputs submitted and not answered yet: queued, or in a group that runs.
    public var unanswered: Int { state.withLock { $0.inputs.count + $0.inputsRunning } }

    private static func take(_ pending: inout Pending) -> Group {
        let group = Group(inputs: pending.inputs, waiters: pending.waiters)
        pending.inputsRunning += group.inputs.count
        pending.inputs = []
        pending.waiters = []
        return group
    }

    /// Runs `first`, then whatever queued while it ran, until nothing is waiting.
    private func runUntilIdle(_ first: Group) async {
        var group = first
        while true {
            do {
                let outputs = try await work(group.inputs)
                guard outputs.count == group.waiters.count else {
                    throw WorkGrouperError(inputs: group.inputs.count, outputs: outputs.count)
                }
                for (waiter, output) in zip(group.waiters, outputs) { waiter.resume(returning: output) }
            } catch {
                for waiter in group.waiters { waiter.resume(throwing: error) }
            }
            let done = group.inputs.count
            let next = state.withLock { pending -> Group? in
                pending.inputsRunning -= done
                guard !pending.inputs.isEmpty else {
                    pending.groupsRunning -= 1
                    return nil
                }
                return Self.take(&pending)
            }
            guard let next else { return }
            group = next
        }
    }
}

/// A group's work answered another number of outputs than it was given inputs (a defect of the work).
public struct WorkGrouperError: Error, CustomStringConvertible {
    public let inputs: Int
    public let outputs: Int

    public var description: String { "grouped work answered \(outputs) outputs for \(inputs) inputs" }
}
