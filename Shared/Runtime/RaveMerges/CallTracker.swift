import RaveRPC
import Synchronization

/// Counts the calls a process is serving by the epoch they started in, so a merge can wait for every call that
/// started before it redirected an id ("drain").
///
/// A call that resolved a source id before the redirect may still write under it; once every call of the earlier
/// epochs has finished, nothing can, and the merge (or a sweep) that moves the source's rows afterwards sees all
/// of them. Two lock-protected counter updates per call.
final class CallTracker: Sendable {
    private struct Waiter {
        var beforeEpoch: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    /// Calls running in one epoch.
    private struct Running {
        var epoch: UInt64
        var calls: Int
    }

    private struct State {
        var epoch: UInt64 = 0
        /// The epochs with running calls, oldest first (epochs only grow, so a call starts in the last one): a
        /// call's begin and end touch the end of a short array, with no hashing.
        var running: [Running] = []
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0

        /// The epoch of the oldest running call, or nil when none runs.
        var oldest: UInt64? { running.first?.epoch }

        /// Waiters whose earlier calls have all finished.
        mutating func satisfiedWaiters() -> [CheckedContinuation<Bool, Never>] {
            let oldest = self.oldest ?? .max
            let done = waiters.filter { $0.value.beforeEpoch <= oldest }
            for key in done.keys { waiters[key] = nil }
            return done.values.map(\.continuation)
        }
    }

    private let state = Mutex(State())

    /// Marks a call as started; pass the result to `end`.
    func begin() -> UInt64 {
        state.withLock { state in
            if let last = state.running.indices.last, state.running[last].epoch == state.epoch {
                state.running[last].calls += 1
            } else {
                state.running.append(Running(epoch: state.epoch, calls: 1))
            }
            return state.epoch
        }
    }

    /// Marks a call of `epoch` as finished.
    func end(_ epoch: UInt64) {
        let resumed = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard let index = state.running.lastIndex(where: { $0.epoch == epoch }) else { return [] }
            state.running[index].calls -= 1
            guard state.running[index].calls == 0 else { return [] }
            state.running.remove(at: index)
            return state.waiters.isEmpty ? [] : state.satisfiedWaiters()
        }
        for continuation in resumed { continuation.resume(returning: true) }
    }

    /// Drains begun so far (calls started now belong to this epoch).
    var epoch: UInt64 { state.withLock { $0.epoch } }

    /// Calls started and not yet finished.
    var runningCalls: Int { state.withLock { $0.running.reduce(0) { $0 + $1.calls } } }

    /// Returns once every call that started before this one was made has finished: true, or false when `timeout`
    /// passed first (the timer then lingers until the timeout, finding nothing to do).
    func drain(timeout: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let waiter = state.withLock { state -> UInt64? in
                state.epoch += 1
                guard let oldest = state.oldest, oldest < state.epoch else { return nil }
                state.nextWaiter += 1
                state.waiters[state.nextWaiter] = Waiter(beforeEpoch: state.epoch, continuation: continuation)
                return state.nextWaiter
            }
            guard let waiter else {
                continuation.resume(returning: true)
                return
            }
            Task {
                try? await Task.sleep(for: timeout)
                let expired = self.state.withLock { $0.waiters.removeValue(forKey: waiter) }
                expired?.continuation.resume(returning: false)
            }
        }
    }
}

/// A service whose calls `CallTracker` counts; routing, names, handlers and fast paths are the wrapped service's.
///
/// A method's fast path (`RPCMethod.fastPath`, answered in place on the connection's loop) is counted too, like its
/// handler: whatever path serves a call, a drain waits for it. A fast path cannot wait for anything, so it writes
/// nothing durable, but it may still act under an id it resolved before a redirect (in memory), and counting it costs
/// two short lock holds.
struct TrackedService<Base: RPCService>: RPCService {
    static var serviceName: String { Base.serviceName }
    let methods: [RPCMethod]

    init(_ base: Base, calls: CallTracker) {
        methods = base.methods.map { method in
            let handler = method.handler
            let fastPath = method.fastPath.map { fastPath -> RPCMethod.FastPath in
                { request, context in
                    let epoch = calls.begin()
                    defer { calls.end(epoch) }
                    return try fastPath(request, context)
                }
            }
            return RPCMethod(
                name: method.name,
                handler: { request, context in
                    let epoch = calls.begin()
                    defer { calls.end(epoch) }
                    return try await handler(request, context)
                }, fastPath: fastPath)
        }
    }
}
