import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

/// The manual clock the timer tests of this target drive (`ManualLoopClock`, `InMemoryServer`); the server's own timers
/// under it are tested in `DrainTests`, `IdleTests`, `ConnectionDeadlineTests` and `InputLimitTests`.
@Suite("Manual clock", .timeLimit(.minutes(1)))
struct LoopClockTests {
    /// Timer callbacks in the order they fired.
    final class Fired: Sendable {
        let order = Mutex<[Int]>([])
        var all: [Int] { order.withLock { $0 } }
        func record(_ value: Int) { order.withLock { $0.append(value) } }
    }

    @Test func loopTimersFireOnlyOnceTheClockPassesThem() async throws {
        let clock = ManualLoopClock()
        let group = try clock.makeGroup()
        defer { group.shutdown() }
        let loop = group.next()
        let fired = Fired()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                loop.scheduleTimer(after: 2_000_000_000) { fired.record(2) }
                loop.scheduleTimer(after: 1_000_000_000) { fired.record(1) }
                let cancelled = loop.scheduleTimer(after: 1_500_000_000) { fired.record(-1) }
                loop.scheduleTimer(after: 3_600_000_000_000) { fired.record(3) }
                loop.cancelTimer(cancelled)
                continuation.resume()
            }
        }
        #expect(loop.now() == clock.now)
        // However long the machine takes, nothing is due until the clock moves.
        await clock.advance(by: .milliseconds(999))
        #expect(fired.all.isEmpty)
        await clock.advance(by: .milliseconds(501))
        #expect(fired.all == [1])
        await clock.advance(by: .seconds(1))
        #expect(fired.all == [1, 2])
        await clock.advance(by: .seconds(3600))
        #expect(fired.all == [1, 2, 3])
    }
}
