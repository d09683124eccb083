import RaveTransport
import Synchronization
import Testing

/// Background tasks with an owner that can cancel and await them.
@Suite struct OwnedTasksTests {
    @Test func waitUntilDoneReturnsOnceEveryTaskEnded() async {
        let tasks = OwnedTasks()
        let release = AsyncStream<Void>.makeStream()
        let finished = Atomic<Int>(0)
        for _ in 0..<3 {
            tasks.spawn {
                for await _ in release.stream {}
                finished.add(1, ordering: .relaxed)
            }
        }
        #expect(tasks.count == 3)
        release.continuation.finish()
        await tasks.waitUntilDone()
        let count = finished.load(ordering: .relaxed)
        #expect(count == 3)
        #expect(tasks.count == 0)
    }

    @Test func cancelAllEndsASleepAtOnce() async {
        let tasks = OwnedTasks()
        let cancelled = Atomic<Bool>(false)
        tasks.spawn {
            try? await Task.sleep(for: .seconds(3600))
            cancelled.store(Task.isCancelled, ordering: .relaxed)
        }
        tasks.cancelAll()
        await tasks.waitUntilDone()
        let wasCancelled = cancelled.load(ordering: .relaxed)
        #expect(wasCancelled)
    }

    @Test func waitingWithNothingRunningReturnsAtOnce() async {
        let tasks = OwnedTasks()
        await tasks.waitUntilDone()
        #expect(tasks.count == 0)
    }
}
