import Synchronization
import Testing

@testable import RaveTransport

@Suite struct TimerQueueTests {
    @Test func popsTimersInDeadlineOrder() {
        var queue = TimerQueue()
        let fired = Mutex<[Int]>([])
        for (index, deadline) in [30, 10, 20].enumerated() {
            _ = queue.insert(deadline: UInt64(deadline)) { fired.withLock { $0.append(index) } }
        }
        while let callback = queue.popDue(now: 100) { callback() }
        #expect(fired.withLock { $0 } == [1, 2, 0])
        #expect(queue.nextDeadline == nil)
    }

    @Test func cancelledTimerNeverFiresAndLeavesNextDeadline() {
        var queue = TimerQueue()
        let early = queue.insert(deadline: 5) { Issue.record("cancelled timer fired") }
        _ = queue.insert(deadline: 50) {}
        queue.cancel(early)
        #expect(queue.nextDeadline == 50)
        #expect(queue.popDue(now: 10) == nil)
        #expect(queue.popDue(now: 50) != nil)
    }
}

extension TimerQueueTests {
    @Test func cancelledTimersDoNotAccumulate() {
        var queue = TimerQueue()
        var fired = 0
        for round in 0..<100 {
            let handles = (0..<1000).map { index in
                queue.insert(deadline: UInt64(1_000_000 + round * 1000 + index)) { fired += 1 }
            }
            for handle in handles.dropFirst() { queue.cancel(handle) }
        }
        #expect(queue.count == 100)
        #expect(queue.storedEntryCount <= 2 * 1024 + 100)
        while let callback = queue.popDue(now: .max) { callback() }
        #expect(fired == 100)
    }
}

@Suite struct EventLoopTests {
    @Test func executeRunsWorkOnTheLoopThread() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let ranOnLoop = await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: loop.isInLoop) }
        }
        #expect(ranOnLoop)
        #expect(!loop.isInLoop)
    }

    @Test func timersFireInOrderAndCancelledOnesDoNot() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let order = await withCheckedContinuation { (continuation: CheckedContinuation<[Int], Never>) in
            loop.execute {
                var fired: [Int] = []
                let cancelled = loop.scheduleTimer(after: 1_000_000) { fired.append(-1) }
                loop.scheduleTimer(after: 20_000_000) {
                    fired.append(2)
                    continuation.resume(returning: fired)
                }
                loop.scheduleTimer(after: 5_000_000) { fired.append(1) }
                loop.cancelTimer(cancelled)
            }
        }
        #expect(order == [1, 2])
    }

    /// The descriptor stays armed for a cancelled earliest deadline; the timers after it still fire, in order.
    @Test func timersAfterACancelledEarliestOneStillFire() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let fired = Mutex<[Int]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                let earliest = loop.scheduleTimer(after: 5_000_000) { fired.withLock { $0.append(-1) } }
                loop.scheduleTimer(after: 60_000_000) {
                    fired.withLock { $0.append(2) }
                    continuation.resume()
                }
                // A later iteration, as when a call is answered: the earliest goes, a new one lands between.
                loop.execute {
                    loop.cancelTimer(earliest)
                    loop.scheduleTimer(after: 20_000_000) { fired.withLock { $0.append(1) } }
                }
            }
        }
        #expect(fired.withLock { $0 } == [1, 2])
    }
}
