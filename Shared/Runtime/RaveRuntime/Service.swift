import Synchronization

/// A long-running part of a process (the RPC server, the admin HTTP server, a background worker).
///
/// `run()` owns the service's background work: it returns only when that work has ended. `shutdown()` asks it to
/// end gracefully (stop accepting, finish in-flight work) and may be called while `run()` is still starting.
public protocol Service: Sendable {
    /// The name used in log lines ("rpc-server").
    var name: String { get }
    /// Does the service's work until it is shut down or fails.
    func run() async throws
    /// Asks `run()` to return soon; returns once the request is made, not when `run()` has returned.
    func shutdown() async
}

extension Service {
    public var name: String { String(describing: Self.self) }
}

/// A one-way latch: tasks wait until it is opened, and every later wait returns at once.
///
/// Services use it to park `run()` until `shutdown()` opens it.
public final class ShutdownLatch: Sendable {
    private let state = Mutex<State>(.closed([]))

    private enum State {
        case closed([CheckedContinuation<Void, Never>])
        case open
    }

    public init() {}

    /// Whether `open()` has been called.
    public var isOpen: Bool {
        state.withLock { if case .open = $0 { true } else { false } }
    }

    /// Opens the latch and releases every waiter; opening it again does nothing.
    public func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard case .closed(let waiters) = state else { return [] }
            state = .open
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the latch is open.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                guard case .closed(var waiters) = state else { return true }
                waiters.append(continuation)
                state = .closed(waiters)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
