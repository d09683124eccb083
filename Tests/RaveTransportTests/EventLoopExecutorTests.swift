import Testing

@testable import RaveTransport

@Suite("Event loop as task executor")
struct EventLoopExecutorTests {
    @Test func taskPreferringALoopRunsOnItsThreadAcrossSuspensions() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let onLoop = await Task(executorPreference: loop) { () async throws -> [Bool] in
            let before = loop.isInLoop
            try await Task.sleep(for: .milliseconds(5))
            return [before, loop.isInLoop]
        }.result
        #expect(try onLoop.get() == [true, true])
    }

    @Test func sleepOnTheLoopLastsAtLeastItsDuration() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let elapsed = try await Task(executorPreference: loop) {
            let clock = ContinuousClock()
            let start = clock.now
            try await Task.sleep(for: .milliseconds(50))
            return clock.now - start
        }.value
        #expect(elapsed >= .milliseconds(50))
    }

    @Test func taskPreferringAStoppedLoopStillRuns() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        let loop = group.next()
        group.shutdown()
        let value = await Task(executorPreference: loop) { 42 }.value
        #expect(value == 42)
    }
}

extension TimerQueueTests {
    @Test func staleHandleDoesNotCancelTheTimerThatReusedItsSlot() {
        var queue = TimerQueue()
        var fired: [String] = []
        let first = queue.insert(deadline: 10) { fired.append("first") }
        queue.cancel(first)
        _ = queue.insert(deadline: 20) { fired.append("second") }
        queue.cancel(first)
        while let callback = queue.popDue(now: 100) { callback() }
        #expect(fired == ["second"])
        #expect(queue.count == 0)
    }
}
