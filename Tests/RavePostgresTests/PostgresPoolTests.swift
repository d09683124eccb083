import RavePostgres
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@Suite struct PostgresPoolTests {
    @Test(.timeLimit(.minutes(1))) func exhaustedPoolFailsQuicklyInsteadOfHanging() async throws {
        try await TestDatabase.with { database in
            let pool = try database.makePool(size: 1, acquireTimeout: .milliseconds(300))
            defer { pool.shutdown() }
            // Open the only connection before the holder takes it: on a loaded machine opening it can take longer
            // than the 300 ms acquire timeout, which failed the holder instead of the call under test, and the
            // test then waited forever for the holder to enter. A timed-out call leaves the connection opening.
            var opened = false
            for _ in 0..<100 where !opened { opened = (try? await pool.query("SELECT 1")) != nil }
            try #require(opened, "the pool never opened its connection")
            // The holder keeps the only connection until released: with a fixed hold time, a starved test task
            // could miss the window and then wait for the connection to go idle forever.
            let release = AsyncStream<Void>.makeStream()
            let entered = AsyncStream<Void>.makeStream()
            let holder = Task {
                // Finishing `entered` on failure too: the test then fails on `holder.value` rather than hanging.
                defer { entered.continuation.finish() }
                try await pool.withConnection { _ in
                    entered.continuation.finish()
                    for await _ in release.stream {}
                }
            }
            // Wait until the holder is inside its closure: a fixed pause races with it on a loaded machine, and so
            // did polling the pool's statistics (a connection still being opened counts as open and not idle).
            for await _ in entered.stream {}
            // The holder never lets go by itself: the pool's own error, within the test's time limit, is the proof
            // that the call did not hang.
            let error = try await #require(throws: PostgresError.self) { try await pool.query("SELECT 1") }
            #expect(error.code == .poolExhausted && error.kind == .resourceExhausted)
            release.continuation.finish()
            try await holder.value
            #expect(try await pool.query("SELECT 1 AS one").first?.decode(Int.self, column: "one") == 1)
        }
    }

    @Test func transactionRollsBackWhenTheBodyThrows() async throws {
        struct Refused: Error {}
        try await TestDatabase.with { database in
            let pool = try database.makePool()
            defer { pool.shutdown() }
            try await pool.query("CREATE TABLE wallets (id int8 PRIMARY KEY, balance int8 NOT NULL)")
            try await pool.query("INSERT INTO wallets VALUES (1, 100)")
            await #expect(throws: Refused.self) {
                try await pool.transaction { tx in
                    try await tx.query("UPDATE wallets SET balance = balance - 50 WHERE id = 1")
                    throw Refused()
                }
            }
            let balance = try await pool.query("SELECT balance FROM wallets WHERE id = 1")
            #expect(try balance.first?.decode(Int64.self, column: "balance") == 100)
            try await pool.transaction { tx in
                try await tx.query("UPDATE wallets SET balance = balance - 30 WHERE id = 1")
            }
            let after = try await pool.query("SELECT balance FROM wallets WHERE id = 1")
            #expect(try after.first?.decode(Int64.self, column: "balance") == 70)
        }
    }

    @Test(.timeLimit(.minutes(1))) func serializationFailuresAreRetried() async throws {
        try await TestDatabase.with { database in
            let pool = try database.makePool(size: 4)
            defer { pool.shutdown() }
            try await pool.query("CREATE TABLE counters (id int8 PRIMARY KEY, value int8 NOT NULL)")
            try await pool.query("INSERT INTO counters VALUES (1, 0)")
            let attempts = AttemptCounter()
            let bothRead = Rendezvous(parties: 2)
            let metrics = TransactionMetrics.shared
            let (retriesBefore, conflictsBefore) = (metrics.retries.value, metrics.serializationFailures.value)
            // Each transaction reads, waits until the other has read too, then writes: one of them must fail 40001.
            // (A retry passes the rendezvous at once.)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await pool.transaction(isolation: .serializable, retryOnSerializationFailure: true) { tx in
                            attempts.increment()
                            let rows = try await tx.query("SELECT value FROM counters WHERE id = 1")
                            let value = try rows.first?.decode(Int64.self, column: "value") ?? 0
                            await bothRead.arrive()
                            try await tx.query("UPDATE counters SET value = $1 WHERE id = 1", [value + 1])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let final = try await pool.query("SELECT value FROM counters WHERE id = 1")
            #expect(try final.first?.decode(Int64.self, column: "value") == 2)
            #expect(attempts.value >= 3)
            // Counted for /metrics (other tests may add to the process-wide counters, never take away).
            #expect(metrics.retries.value >= retriesBefore + 1)
            #expect(metrics.serializationFailures.value >= conflictsBefore + 1)
            #expect(MetricsRegistry.shared.exposition().contains("db_client_transaction_conflicts{sqlstate=\"40001\"}"))
        }
    }

    @Test(.timeLimit(.minutes(1))) func noRetryStartsTooCloseToTheCallDeadline() async throws {
        try await TestDatabase.with { database in
            let pool = try database.makePool(size: 4)
            defer { pool.shutdown() }
            try await pool.query("CREATE TABLE counters (id int8 PRIMARY KEY, value int8 NOT NULL)")
            try await pool.query("INSERT INTO counters VALUES (1, 0)")
            let bothRead = Rendezvous(parties: 2)
            // The caller stops waiting in 20 ms, less than a retried transaction needs: the conflict answers at once.
            let deadline = monotonicNanoseconds() + 20_000_000
            let outcomes = try await withThrowingTaskGroup(of: PostgresErrorKind?.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        do {
                            try await PostgresPool.$callDeadline.withValue(deadline) {
                                try await pool.transaction(isolation: .serializable, retryOnSerializationFailure: true)
                                {
                                    tx in
                                    try await tx.query("SELECT value FROM counters WHERE id = 1")
                                    await bothRead.arrive()
                                    try await tx.query("UPDATE counters SET value = value + 1 WHERE id = 1")
                                }
                            }
                            return nil
                        } catch let error as PostgresError {
                            return error.kind
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.contains(nil) && outcomes.contains(.aborted))
        }
    }

    @Test(.timeLimit(.minutes(1))) func withoutRetrySerializationFailureSurfacesAsAborted() async throws {
        try await TestDatabase.with { database in
            let pool = try database.makePool(size: 4)
            defer { pool.shutdown() }
            try await pool.query("CREATE TABLE counters (id int8 PRIMARY KEY, value int8 NOT NULL)")
            try await pool.query("INSERT INTO counters VALUES (1, 0)")
            let bothRead = Rendezvous(parties: 2)
            let outcomes = try await withThrowingTaskGroup(of: PostgresErrorKind?.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        do {
                            try await pool.transaction(isolation: .serializable) { tx in
                                try await tx.query("SELECT value FROM counters WHERE id = 1")
                                await bothRead.arrive()
                                try await tx.query("UPDATE counters SET value = value + 1 WHERE id = 1")
                            }
                            return nil
                        } catch let error as PostgresError {
                            return error.kind
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.contains(nil) && outcomes.contains(.aborted))
        }
    }
}

/// Counts closure invocations across concurrent transactions.
final class AttemptCounter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// Holds each caller of `arrive()` until `parties` callers have arrived; later callers pass at once.
///
/// Serialization tests need both transactions to have read before either writes; a sleep gave that only while the
/// machine was quick enough to start the second transaction within it.
actor Rendezvous {
    private let parties: Int
    private var arrived = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(parties: Int) { self.parties = parties }

    func arrive() async {
        arrived += 1
        guard arrived < parties else {
            waiting.forEach { $0.resume() }
            waiting = []
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }
}

/// The pool's own tasks (connection attempts, health checks) have an owner: shutdown stops them, and the pool's
/// owner can wait for them before the event loops they use stop.
@Suite struct PostgresPoolOwnershipTests {
    @Test(.timeLimit(.minutes(1))) func shutdownEndsAConnectionAttemptWaitingOutItsBackoff() async throws {
        var configuration = PostgresPool.Configuration(connectionString: "postgresql://rave@127.0.0.1:1/none")
        configuration.size = 1
        configuration.acquireTimeout = .milliseconds(200)
        configuration.connectTimeout = .seconds(2)
        let pool = try PostgresPool(configuration: configuration)
        // Nothing listens on port 1: the first attempt fails, and the pool keeps trying with a pause between.
        _ = try? await pool.query(PostgresQuery("SELECT 1"))
        pool.shutdown()
        await pool.waitForBackgroundWork()
        #expect(pool.backgroundTaskCount == 0)
    }
}
