import RaveOutbox
import RavePostgres
import RaveTelemetry
import Testing

@testable import Gifts

@Suite("Outbox wake-up")
struct OutboxWakeupTests {
    @Test("commits reported before and while it runs wake the outbox's listeners, and shutdown ends it")
    func committedEventsWakeListeners() async throws {
        let database = try await TestDatabase.create()
        let pool = try database.makePool(size: 2)
        let listener = PostgresListener(connectionString: database.url, loop: TestDatabase.group.next())
        do {
            let notifications = try await listener.notifications(channel: Outbox.channel)
            let wakeup = OutboxWakeup(pool: pool, logger: Logger(label: "wakeup-test", level: .critical))
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
}
