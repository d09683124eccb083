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

    /// Arms the timer for the earliest of `deadlines` (the calls still waiting after `expire`), if any.
    mutating func arm(
        forEarliestOf deadlines: some Sequence<UInt64>, on loop: EventLoop, expire: @escaping () -> Void
    ) {
        guard let earliest = deadlines.min(), needsArming(for: earliest) else { return }
        arm(at: earliest, on: loop, expire: expire)
    }

    /// The stream ids of `calls` whose deadline has passed at `now` (the loop's `now()`), earliest deadline first:
    /// a timer that fires late may find several due, and they are answered in the order separate timers would have
    /// fired.
    static func due<Call>(in calls: [UInt32: Call], now: UInt64, deadline: (Call) -> UInt64) -> [UInt32] {
        return calls.compactMap { streamID, call in
            let due = deadline(call)
            return due <= now ? (streamID, due) : nil
        }
        .sorted { ($0.1, $0.0) < ($1.1, $1.0) }.map(\.0)
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
