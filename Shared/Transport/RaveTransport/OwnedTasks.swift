import Synchronization

/// The tasks a long-lived object starts on its own schedule (a reconnect after a pause, a health check), kept so
/// that whoever owns the object can cancel them and wait for them at shutdown.
///
/// Without it such a task outlives its owner's `run()`: it may still dial a database, or use an event loop, after
/// the process has stopped them. Safe from any thread.
public final class OwnedTasks: Sendable {
    private struct State {
        var nextID: UInt64 = 0
        var running: [UInt64: Task<Void, Never>] = [:]
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Tasks started and not finished yet.
    public var count: Int { state.withLock { $0.running.count } }

    /// Starts `operation` as a task kept until it returns.
    public func spawn(_ operation: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            // Made under the lock, so the task's own removal (which takes the lock) always finds it.
            state.running[id] = Task {
                await operation()
                self.finished(id)
            }
        }
    }

    /// Cancels every task still running (a sleep ends early; the task decides what to do then).
    public func cancelAll() {
        for task in state.withLock({ Array($0.running.values) }) { task.cancel() }
    }

    /// Returns once no task is running.
    public func waitUntilDone() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                guard !state.running.isEmpty else { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func finished(_ id: UInt64) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.running[id] = nil
            guard state.running.isEmpty else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
