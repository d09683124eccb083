import RaveTransport

/// The one timer a connection keeps for the deadlines of all its calls.
///
/// A timer per call cost a callback allocation and a heap insertion and removal for every call, although
/// nearly every call is answered long before its deadline. Instead the connection arms one timer for the
/// earliest deadline it knows of; when a call finishes the timer stays, and when it fires the connection
/// expires the calls that are due and arms it again for the earliest one left. Calls of one connection
/// usually share a timeout, so a later call's deadline is rarely the earliest and starting it costs one
/// comparison. Confined to the connection's event loop.
struct ConnectionDeadlines {
    /// The deadline the timer is armed for; `.max` when no timer is armed.
    private(set) var armedDeadline: UInt64 = .max
    private var timer: TimerHandle?

    /// Whether a call due at `deadline` needs the timer armed earlier; check before building the callback.
    func needsArming(for deadline: UInt64) -> Bool {
        deadline < armedDeadline
    }

    /// Arms the timer for `deadline`, replacing a later one; `expire` runs on `loop` when it fires.
    mutating func arm(at deadline: UInt64, on loop: EventLoop, expire: @escaping () -> Void) {
        guard deadline < armedDeadline else { return }
        if let timer { loop.cancelTimer(timer) }
        armedDeadline = deadline
        timer = loop.scheduleTimer(at: deadline, expire)
    }

    /// Records that the timer fired; call first thing in `expire`.
    mutating func fired() {
        armedDeadline = .max
        timer = nil
    }

    /// Cancels the timer, so a closed connection is not kept alive by it.
    mutating func cancel(on loop: EventLoop) {
        if let timer { loop.cancelTimer(timer) }
        fired()
    }
}
