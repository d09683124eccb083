import RaveOutbox
import RavePostgres
import RaveTelemetry
import Synchronization
import Testing

@testable import Gifts

/// RaveOutbox's wake-up as gifts (and every publisher) relies on it: NOTIFY after the commit, coalesced.
@Suite("Outbox wake-up")
struct OutboxWakeupTests {
    static let quiet = Logger(label: "wakeup-test", level: .critical)

    @Test("commits reported before and while it runs wake the outbox's listeners, and shutdown ends it")
    func committedEventsWakeListeners() async throws {
        let database = try await TestDatabase.create()
        let pool = try database.makePool(size: 2)
        let listener = PostgresListener(connectionString: database.url, loop: TestDatabase.group.next())
        do {
            let notifications = try await listener.notifications(channel: Outbox.channel)
            let wakeup = OutboxWakeup(pool: pool, logger: Self.quiet)
            // A report before `run()` starts is kept, not lost.
            wakeup.eventsCommitted()
            let running = Task { await wakeup.run() }
            var iterator = notifications.makeAsyncIterator()
            #expect(await iterator.next() != nil)
            // A burst while it runs: each report is answered by a NOTIFY no older than the report.
            for _ in 0..<5 { wakeup.eventsCommitted() }
            #expect(await iterator.next() != nil)
            await wakeup.shutdown()
            await running.value
        } catch {
            listener.shutdown()
            pool.shutdown()
            try? await database.drop()
            throw error
        }
        listener.shutdown()
        pool.shutdown()
        try await database.drop()
    }

    @Test("a transaction's after-commit actions run after its commit and never after a rollback")
    func afterCommitActionsRunOnlyOnCommit() async throws {
        try await TestDatabase.withPool { pool in
            let runs = Mutex(0)
            try await pool.transaction { transaction in
                transaction.afterCommit { runs.withLock { $0 += 1 } }
                #expect(runs.withLock { $0 } == 0)
            }
            #expect(runs.withLock { $0 } == 1)
            struct Abandon: Error {}
            await #expect(throws: Abandon.self) {
                try await pool.transaction { transaction in
                    transaction.afterCommit { runs.withLock { $0 += 1 } }
                    throw Abandon()
                }
            }
            #expect(runs.withLock { $0 } == 1)
        }
    }

    @Test("with the pool's wake-up running, an event enqueued in a transaction is notified after the commit")
    func enqueuedEventsAreNotifiedAfterTheCommit() async throws {
        let database = try await TestDatabase.create()
        let pool = try database.makePool(size: 4)
        let listener = PostgresListener(connectionString: database.url, loop: TestDatabase.group.next())
        let wakeup = OutboxWakeup(pool: pool, logger: Self.quiet)
        let running = Task { await wakeup.run() }
        do {
            try await Migrator(pool: pool, directory: GiftsMain.migrationsDirectory).migrate()
            let notifications = try await listener.notifications(channel: Outbox.channel)
            while !OutboxWakeup.isRunning(for: pool) { try await Task.sleep(for: .milliseconds(10)) }
            let committed = Mutex(false)
            try await pool.transaction { transaction in
                try await Outbox.enqueue(in: transaction, topic: "test.topic", key: "k1", payload: [1])
                transaction.afterCommit { committed.withLock { $0 = true } }
            }
            var iterator = notifications.makeAsyncIterator()
            #expect(await iterator.next() != nil)
            #expect(committed.withLock { $0 })
        } catch {
            Issue.record("\(error)")
        }
        await wakeup.shutdown()
        await running.value
        #expect(!OutboxWakeup.isRunning(for: pool))
        listener.shutdown()
        pool.shutdown()
        try await database.drop()
    }
}
