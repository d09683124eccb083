import RaveTransport
import Synchronization

/// A monotonic clock that moves only when the test says so, for event loops whose timers a test drives.
///
/// `makeGroup` starts loops that read this clock instead of the system's (`EventLoopGroup(loopCount:clock:)`):
/// every timer scheduled on them (a channel's handshake and close timeouts, the RPC server's idle, handshake,
/// stalled-frame, drain-grace and deadline timers, the RPC client's call deadlines) fires only once `advance(by:)`
/// has moved the clock past it. A test that waited two seconds for an idle timeout advances the clock instead and
/// finishes at once. It starts at the system's monotonic time, so values read elsewhere stay comparable.
public final class ManualLoopClock: Sendable {
    private let nanoseconds: Ticks
    private let loops = Mutex<[EventLoop]>([])

    public init() {
        nanoseconds = Ticks(monotonicNanoseconds())
    }

    /// The clock's time in monotonic nanoseconds.
    public var now: UInt64 { nanoseconds.value.load(ordering: .acquiring) }

    /// Starts `loopCount` event loops whose timers follow this clock; shut the group down as usual.
    public func makeGroup(loopCount: Int = 1) throws -> EventLoopGroup {
        let ticks = nanoseconds
        let group = try EventLoopGroup(loopCount: loopCount) { ticks.value.load(ordering: .acquiring) }
        loops.withLock { $0 += group.loops }
        return group
    }

    /// Moves the clock forward by `duration` and returns once every loop of this clock has run the timers that
    /// became due (and the work they queued for the end of that iteration, such as a flush).
    ///
    /// What a loop was doing when this was called (a read the test saw the start of) finishes at the old time
    /// first. Call it only while the loops run (before their group's `shutdown()`).
    public func advance(by duration: Duration) async {
        let (seconds, attoseconds) = duration.components
        precondition(seconds >= 0 && attoseconds >= 0, "a manual clock only moves forward")
        let loops = self.loops.withLock { $0 }
        for loop in loops { await Self.endOfIteration(on: loop) }
        _ = nanoseconds.value.wrappingAdd(
            UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000), ordering: .acquiringAndReleasing)
        for loop in loops { await Self.endOfIteration(on: loop) }
    }

    /// Returns once `loop` has finished an iteration begun after this call: its events, queued work, due timers and
    /// end-of-iteration work (work queued with `execute` runs before the due timers, and what it queues for the end
    /// of the iteration after them).
    private static func endOfIteration(on loop: EventLoop) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { loop.executeAtEndOfIteration { continuation.resume() } }
        }
    }
}

/// The clock's value, shared with the loops without them holding the clock (which holds the loops).
private final class Ticks: Sendable {
    let value: Atomic<UInt64>

    init(_ start: UInt64) { value = Atomic(start) }
}
