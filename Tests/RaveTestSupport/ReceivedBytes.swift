import Synchronization

/// What a test's end of a connection has received, and whether the connection closed: the channel handler appends,
/// the test waits for a condition on it (each arrival wakes it, so nothing polls).
public final class ReceivedBytes: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var closed = false
        var arrivals = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Everything received so far and whether the connection closed.
    public var current: (bytes: [UInt8], closed: Bool) { state.withLock { ($0.bytes, $0.closed) } }

    /// Called by the handler with bytes it read.
    public func append(_ bytes: UnsafeRawBufferPointer) {
        changed { $0.bytes.append(contentsOf: bytes) }
    }

    /// Called by the handler when the connection closed.
    public func markClosed() {
        changed { $0.closed = true }
    }

    /// Takes bytes off the front (a parsed response), without waking anyone.
    public func withBytes<Result>(_ body: (inout [UInt8], Bool) -> Result) -> Result {
        state.withLock { body(&$0.bytes, $0.closed) }
    }

    /// Waits until `condition` holds for what arrived (checked at once and after every arrival); throws when
    /// `timeout` passes first.
    public func wait<Result>(
        timeout: Duration = .seconds(15), until condition: (inout [UInt8], Bool) -> Result?
    ) async throws -> Result {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (result, seen) = state.withLock { state in (condition(&state.bytes, state.closed), state.arrivals) }
            if let result { return result }
            guard ContinuousClock.now < deadline else {
                let (bytes, closed) = current
                throw ReceivedBytesTimeout(
                    received: String(decoding: bytes, as: UTF8.self), closed: closed, timeout: timeout)
            }
            await nextArrival(after: seen, deadline: deadline)
        }
    }

    private func changed(_ change: (inout State) -> Void) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            change(&state)
            state.arrivals += 1
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once something arrived after the `seen`th arrival (at once if it already has), or at `deadline`.
    private func nextArrival(after seen: Int, deadline: ContinuousClock.Instant) async {
        let timer = Task {
            try await Task.sleep(until: deadline)
            self.changed { _ in }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let arrived = state.withLock { state -> Bool in
                if state.arrivals != seen { return true }
                state.waiters.append(continuation)
                return false
            }
            if arrived { continuation.resume() }
        }
        timer.cancel()
    }
}

/// A wait on `ReceivedBytes` that ran out of time; says what had arrived.
public struct ReceivedBytesTimeout: Error, CustomStringConvertible {
    public var received: String
    public var closed: Bool
    public var timeout: Duration

    public var description: String {
        "nothing matching arrived within \(timeout) (closed: \(closed)); received \(received.debugDescription)"
    }
}
