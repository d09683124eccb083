import RaveTelemetry
import Synchronization
import Testing

@testable import RaveRuntime

/// Records what services do, in order, across tasks.
final class Journal: Sendable {
    private struct State {
        var entries: [String] = []
        var waiters: [(startCount: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    func add(_ entry: String) {
        let ready = state.withLock { state in
            state.entries.append(entry)
            let started = state.entries.filter { $0.hasPrefix("start ") }.count
            defer { state.waiters.removeAll { $0.startCount <= started } }
            return state.waiters.filter { $0.startCount <= started }.map(\.continuation)
        }
        for waiter in ready { waiter.resume() }
    }

    var all: [String] { state.withLock { $0.entries } }

    /// Returns once `count` services have logged their start.
    func waitUntilStarted(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.entries.filter({ $0.hasPrefix("start ") }).count < count else { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// A service that runs until asked to stop, taking `stopDelay` to wind down, or failing once `failsOnceStarted`
/// services (itself included) have started.
struct RecordingService: Service {
    let name: String
    let journal: Journal
    var stopDelay: Duration = .zero
    var failsOnceStarted: Int?
    var ignoresShutdown = false
    private let latch = ShutdownLatch()

    init(
        _ name: String, journal: Journal, stopDelay: Duration = .zero, failsOnceStarted: Int? = nil,
        ignoresShutdown: Bool = false
    ) {
        self.name = name
        self.journal = journal
        self.stopDelay = stopDelay
        self.failsOnceStarted = failsOnceStarted
        self.ignoresShutdown = ignoresShutdown
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String { "disk on fire" }
    }

    func run() async throws {
        journal.add("start \(name)")
        if let failsOnceStarted {
            // Failing after a fixed pause raced with the other services' start on a loaded machine.
            await journal.waitUntilStarted(failsOnceStarted)
            journal.add("fail \(name)")
            throw Failure()
        }
        await latch.wait()
        if ignoresShutdown {
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
        }
        try? await Task.sleep(for: stopDelay)
        journal.add("stopped \(name)")
    }

    func shutdown() async {
        journal.add("shutdown \(name)")
        latch.open()
    }
}

@Suite struct ServiceGroupTests {
    let logger = Logger(label: "test", sink: .capturing())

    @Test func stopsServicesInReverseOrderWaitingForEach() async throws {
        let journal = Journal()
        let group = ServiceGroup(
            services: [
                RecordingService("database", journal: journal, stopDelay: .milliseconds(30)),
                RecordingService("rpc", journal: journal, stopDelay: .milliseconds(30)),
                RecordingService("admin", journal: journal),
            ], logger: logger)
        let running = Task { try await group.run() }
        try await waitUntil { journal.all.filter { $0.hasPrefix("start") }.count == 3 }
        #expect(journal.all == ["start database", "start rpc", "start admin"])
        #expect(!group.isShuttingDown)

        group.triggerShutdown()
        group.triggerShutdown()
        try await running.value
        #expect(group.isShuttingDown)
        #expect(
            journal.all.dropFirst(3) == [
                "shutdown admin", "stopped admin", "shutdown rpc", "stopped rpc", "shutdown database",
                "stopped database",
            ])
    }

    @Test func shutdownRequestedBeforeRunStillStopsEverything() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [RecordingService("only", journal: journal)], logger: logger)
        group.triggerShutdown()
        try await group.run()
        #expect(journal.all.last == "stopped only")
    }

    @Test func failingServiceStopsTheOthersAndIsReported() async throws {
        let journal = Journal()
        let group = ServiceGroup(
            services: [
                RecordingService("database", journal: journal),
                RecordingService("worker", journal: journal, failsOnceStarted: 3),
                RecordingService("admin", journal: journal),
            ], logger: logger)
        await #expect {
            try await group.run()
        } throws: { error in
            guard let error = error as? RuntimeError else { return false }
            return error.kind == .serviceFailed && error.message == "worker: disk on fire"
        }
        #expect(journal.all.contains("fail worker"))
        #expect(!journal.all.contains("shutdown worker"))
        #expect(journal.all.suffix(4) == ["shutdown admin", "stopped admin", "shutdown database", "stopped database"])
    }

    @Test(.timeLimit(.minutes(1))) func serviceThatDoesNotStopInTimeIsCancelledAndReported() async throws {
        let journal = Journal()
        let group = ServiceGroup(
            services: [
                RecordingService("database", journal: journal),
                RecordingService("stubborn", journal: journal, ignoresShutdown: true),
            ], gracePeriod: .milliseconds(100), logger: logger)
        let running = Task { try await group.run() }
        try await waitUntil { journal.all.count == 2 }
        // The stubborn service stops only when cancelled: the run ending at all shows the grace period cut it off.
        group.triggerShutdown()
        await #expect(throws: RuntimeError.self) { try await running.value }
        #expect(journal.all.contains("stopped stubborn"))
        #expect(journal.all.last == "stopped database")
    }

    @Test func latchReleasesWaitersAndLaterWaits() async {
        let latch = ShutdownLatch()
        async let first: Void = latch.wait()
        async let second: Void = latch.wait()
        latch.open()
        _ = await (first, second)
        await latch.wait()
        #expect(latch.isOpen)
    }
}

/// Polls `condition` until it holds, failing the test after `timeout`.
func waitUntil(timeout: Duration = .seconds(5), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("condition not met within \(timeout)")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}
