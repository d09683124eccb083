import RavePostgres
import RaveTransport
import Synchronization
import Testing

@testable import RaveOutbox

@Suite struct OutboxTests {
    @Test func enqueueRolledBackWithItsTransactionIsNeverDelivered() async throws {
        struct Refused: Error {}
        try await OutboxDatabase.with { database in
            let sink = Sink()
            let dispatcher = OutboxDispatcher(pool: database.pool, deliver: sink.accept)
            await #expect(throws: Refused.self) {
                try await database.pool.transaction { transaction in
                    try await Outbox.enqueue(in: transaction, topic: "gift.sent", key: "user-1", payload: [1])
                    throw Refused()
                }
            }
            let claimed = try await dispatcher.dispatchRound()
            let backlog = try await dispatcher.backlog()
            #expect(claimed == 0 && sink.deliveries.isEmpty && backlog.pending == 0)
        }
    }

    @Test func aBatchIsEnqueuedInOrderWithItsPayloads() async throws {
        try await OutboxDatabase.with { database in
            let sink = Sink()
            let dispatcher = OutboxDispatcher(pool: database.pool, deliver: sink.accept)
            let events = (0..<5).map { (key: "user-\($0 % 2)", payload: [UInt8($0), 0xFF, 0x00]) }
            try await database.pool.transaction { transaction in
                try await Outbox.enqueue(in: transaction, topic: "gift.requested", events: events)
            }
            var claimed = 0
            while true {
                let round = try await dispatcher.dispatchRound()
                if round == 0 { break }
                claimed += round
            }
            #expect(claimed == 5)
            let delivered = sink.deliveries.sorted { $0.sequence < $1.sequence }
            #expect(delivered.map(\.key) == events.map(\.key))
            #expect(delivered.map(\.payload) == events.map(\.payload))
            #expect(delivered.allSatisfy { $0.topic == "gift.requested" })
        }
    }

    @Test func eventsAreDeliveredExactlyOnceToASucceedingSink() async throws {
        try await OutboxDatabase.with { database in
            let sink = Sink()
            var configuration = OutboxDispatcher.Configuration()
            configuration.pollInterval = .seconds(5)  // long: delivery must come from the NOTIFY
            let dispatcher = OutboxDispatcher(
                pool: database.pool, listenOn: (database.url, OutboxDatabase.group.next()),
                configuration: configuration, deliver: sink.accept)
            let running = Task { await dispatcher.run() }
            try await Task.sleep(for: .milliseconds(300))  // let the listener LISTEN
            var enqueued: [RaveID] = []
            for index in 0..<20 {
                enqueued.append(
                    try await database.pool.transaction { transaction in
                        try await Outbox.enqueue(
                            in: transaction, topic: "score.submitted", key: "board-\(index % 3)",
                            payload: [UInt8(index)])
                    })
            }
            #expect(await sink.waitFor(count: 20, within: .seconds(4)))
            try await Task.sleep(for: .milliseconds(300))
            dispatcher.stop()
            await running.value
            #expect(sink.deliveries.map(\.eventID).sorted() == enqueued.sorted())
            let backlog = try await dispatcher.backlog()
            #expect(backlog.pending == 0 && backlog.oldestAge == .zero)
        }
    }

    @Test func failingSinkIsRetriedWithBackoffThenDelivered() async throws {
        try await OutboxDatabase.with { database in
            let sink = Sink(failuresBeforeSuccess: 2)
            var configuration = OutboxDispatcher.Configuration()
            configuration.pollInterval = .milliseconds(20)
            configuration.initialBackoff = .milliseconds(200)
            let dispatcher = OutboxDispatcher(pool: database.pool, configuration: configuration, deliver: sink.accept)
            try await database.pool.transaction { transaction in
                try await Outbox.enqueue(in: transaction, topic: "push.send", key: "user-9", payload: [9])
            }
            let running = Task { await dispatcher.run() }
            #expect(await sink.waitFor(count: 1, within: .seconds(5)))
            dispatcher.stop()
            await running.value
            let attempts = sink.attempts
            #expect(attempts.map(\.event.previousAttempts) == [0, 1, 2])
            // Equal jitter: at least half the 200 ms, then 400 ms, backoff passes between attempts.
            #expect(attempts[1].at - attempts[0].at >= .milliseconds(100))
            #expect(attempts[2].at - attempts[1].at >= .milliseconds(200))
            let row = try #require(
                try await database.pool.query("SELECT attempts, last_error FROM outbox_events").first)
            #expect(try row.decode(Int32.self, column: "attempts") == 3)
            #expect(try row.decode(String?.self, column: "last_error") == nil)
        }
    }

    @Test func recordsTheErrorOfAFailedDelivery() async throws {
        try await OutboxDatabase.with { database in
            let sink = Sink(failuresBeforeSuccess: 1)
            let dispatcher = OutboxDispatcher(pool: database.pool, deliver: sink.accept)
            try await database.pool.transaction { transaction in
                try await Outbox.enqueue(in: transaction, topic: "push.send", key: "user-9", payload: [])
            }
            #expect(try await dispatcher.dispatchRound() == 1)
            let row = try #require(
                try await database.pool.query(
                    "SELECT attempts, last_error, next_attempt_at > now() AS later FROM outbox_events"
                ).first)
            #expect(try row.decode(Int32.self, column: "attempts") == 1)
            #expect(try row.decode(String.self, column: "last_error").contains("unreachable"))
            #expect(try row.decode(Bool.self, column: "later"))
            #expect(try await dispatcher.dispatchRound() == 0)  // not due yet
        }
    }

    @Test func orderPerKeyHoldsWithTwoDispatchersAndFailures() async throws {
        try await OutboxDatabase.with { database in
            let sink = Sink(failureRate: 0.2, delay: .milliseconds(2))
            var configuration = OutboxDispatcher.Configuration()
            configuration.pollInterval = .milliseconds(20)
            configuration.initialBackoff = .milliseconds(10)
            configuration.batchSize = 4
            let dispatchers = (0..<2).map { _ in
                OutboxDispatcher(pool: database.pool, configuration: configuration, deliver: sink.accept)
            }
            var expected: [String: [RaveID]] = [:]
            for index in 0..<60 {
                let key = "key-\(index % 5)"
                let id = try await database.pool.transaction { transaction in
                    try await Outbox.enqueue(in: transaction, topic: "t", key: key, payload: [UInt8(index)])
                }
                expected[key, default: []].append(id)
            }
            let running = dispatchers.map { dispatcher in Task { await dispatcher.run() } }
            #expect(await sink.waitFor(count: 60, within: .seconds(20)))
            for dispatcher in dispatchers { dispatcher.stop() }
            for task in running { await task.value }
            var delivered: [String: [RaveID]] = [:]
            for event in sink.deliveries { delivered[event.key, default: []].append(event.eventID) }
            #expect(delivered == expected)
        }
    }

    @Test func receiverHandlesARedeliveredEventOnce() async throws {
        try await OutboxDatabase.with { database in
            let eventID = RaveID.random()
            try await database.pool.query("CREATE TABLE credits (user_id text PRIMARY KEY, amount int8 NOT NULL)")
            try await database.pool.query("INSERT INTO credits VALUES ('ann', 0)")
            for _ in 0..<3 {
                try await database.pool.transaction { transaction in
                    guard try await ProcessedEvents.markProcessed(eventID, in: transaction) else { return }
                    try await transaction.query("UPDATE credits SET amount = amount + 5 WHERE user_id = 'ann'")
                }
            }
            let row = try #require(try await database.pool.query("SELECT amount FROM credits").first)
            #expect(try row.decode(Int64.self, column: "amount") == 5)
        }
    }

    /// Delivered events and processed ids are kept for the retention, then pruned (events in batches until none is
    /// left); an undelivered event stays however old, since it still has to go out.
    @Test func pruningDeletesOnlyWhatWasDeliveredOrProcessedBeforeTheRetention() async throws {
        try await OutboxDatabase.with { database in
            let old = OutboxDispatcher.pruneBatchSize + 5
            try await database.pool.transaction { transaction in
                for index in 0..<(old + 3) {
                    try await Outbox.enqueue(in: transaction, topic: "t", key: "k\(index % 7)", payload: [1])
                }
                try await Outbox.enqueue(in: transaction, topic: "t", key: "waiting", payload: [2])
            }
            // The first `old` delivered 8 days ago, 3 delivered just now, one never delivered (and created long ago).
            try await database.pool.query(
                """
                UPDATE outbox_events SET delivered_at = now() - interval '8 days'
                WHERE id IN (SELECT id FROM outbox_events WHERE key <> 'waiting' ORDER BY id LIMIT \(old))
                """)
            try await database.pool.query(
                "UPDATE outbox_events SET delivered_at = now() WHERE delivered_at IS NULL AND key <> 'waiting'")
            try await database.pool.query(
                "UPDATE outbox_events SET created_at = now() - interval '30 days' WHERE key = 'waiting'")
            for age in ["8 days", "1 hour"] {
                try await database.pool.query(
                    """
                    INSERT INTO processed_events
                    SELECT gen_random_uuid(), now() - interval '\(age)' FROM generate_series(1, 4)
                    """)
            }

            let dispatcher = OutboxDispatcher(pool: database.pool) { _ in }
            #expect(try await dispatcher.prune() == old)
            #expect(try await ProcessedEvents.pruneBatch(in: database.pool) == 4)
            let left = try await database.pool.query(
                """
                SELECT count(*) FILTER (WHERE delivered_at IS NOT NULL) AS delivered,
                    count(*) FILTER (WHERE delivered_at IS NULL) AS waiting,
                    (SELECT count(*) FROM processed_events) AS processed
                FROM outbox_events
                """)[0]
            #expect(try left.decode(Int64.self, column: "delivered") == 3)
            #expect(try left.decode(Int64.self, column: "waiting") == 1)
            #expect(try left.decode(Int64.self, column: "processed") == 4)
            #expect(try await dispatcher.prune() == 0)
            #expect(try await ProcessedEvents.pruneBatch(in: database.pool) == 0)
        }
    }

    @Test(.timeLimit(.minutes(1))) func stopLetsTheDeliveryUnderWayFinishAndBeMarked() async throws {
        try await OutboxDatabase.with { database in
            let sink = Sink(delay: .milliseconds(400))
            var configuration = OutboxDispatcher.Configuration()
            configuration.pollInterval = .milliseconds(20)
            let dispatcher = OutboxDispatcher(pool: database.pool, configuration: configuration, deliver: sink.accept)
            try await database.pool.transaction { transaction in
                try await Outbox.enqueue(in: transaction, topic: "t", key: "k", payload: [])
            }
            let running = Task { await dispatcher.run() }
            #expect(await sink.waitForAttempt(within: .seconds(3)))
            dispatcher.stop()
            // A stop that waited on something else than the delivery under way would hang here (the suite's
            // time limit catches it); the delivery itself finishes and is marked.
            await running.value
            #expect(sink.deliveries.count == 1)
            #expect(try await dispatcher.backlog().pending == 0)
        }
    }
}

/// A delivery target that records attempts, fails on demand, and lets tests wait for deliveries.
final class Sink: Sendable {
    struct DeliveryFailed: Error, CustomStringConvertible {
        var description: String { "receiver unreachable" }
    }

    private struct State {
        var attempts: [(event: OutboxEvent, at: ContinuousClock.Instant)] = []
        var deliveries: [OutboxEvent] = []
    }

    private let failuresBeforeSuccess: Int
    private let failureRate: Double
    private let delay: Duration
    private let state = Mutex(State())

    init(failuresBeforeSuccess: Int = 0, failureRate: Double = 0, delay: Duration = .zero) {
        self.failuresBeforeSuccess = failuresBeforeSuccess
        self.failureRate = failureRate
        self.delay = delay
    }

    var attempts: [(event: OutboxEvent, at: ContinuousClock.Instant)] { state.withLock { $0.attempts } }
    var deliveries: [OutboxEvent] { state.withLock { $0.deliveries } }

    @Sendable func accept(_ event: OutboxEvent) async throws {
        state.withLock { $0.attempts.append((event, .now)) }
        if delay > .zero { try await Task.sleep(for: delay) }
        if event.previousAttempts < failuresBeforeSuccess || Double.random(in: 0..<1) < failureRate {
            throw DeliveryFailed()
        }
        state.withLock { $0.deliveries.append(event) }
    }

    func waitFor(count: Int, within limit: Duration) async -> Bool {
        await poll(within: limit) { self.deliveries.count >= count }
    }

    func waitForAttempt(within limit: Duration) async -> Bool {
        await poll(within: limit) { !self.attempts.isEmpty }
    }

    private func poll(within limit: Duration, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
