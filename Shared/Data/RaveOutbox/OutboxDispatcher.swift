import RavePostgres
import RaveTelemetry
import RaveTransport
import Synchronization

/// Delivers outbox events: claims due ones with `FOR UPDATE SKIP LOCKED`, hands each to `deliver`, and marks it
/// delivered, or schedules a retry with exponential backoff and jitter, recording the error.
///
/// Several dispatchers (replicas) may share one table. Events of one key go out one at a time, in order: an
/// event is only claimed when no earlier event of its key is undelivered, so a failing event holds back the
/// later ones of its key (and only those). Delivery is at least once: a crash between delivering and marking
/// delivers again, which receivers absorb with `ProcessedEvents`.
public final class OutboxDispatcher: Sendable {
    /// How eagerly the dispatcher polls and how patiently it retries; every field has a default.
    public struct Configuration: Sendable {
        /// Events claimed per round (default 100).
        public var batchSize = 100
        /// How often to look for due events without a notification, for retries and missed NOTIFYs (default 1 s).
        public var pollInterval: Duration = .seconds(1)
        /// The first retry's delay; each failure doubles it (default 500 ms).
        public var initialBackoff: Duration = .milliseconds(500)
        /// The longest delay between retries (default 5 minutes).
        public var maximumBackoff: Duration = .seconds(300)
        /// How long delivered events are kept (default 7 days), to look into a delivery.
        public var retention: Duration = .seconds(7 * 86_400)
        /// How often `run()` deletes what outlived `retention` (default hourly).
        public var pruneInterval: Duration = .seconds(3600)

        public init() {}
    }

    /// What `run()` is doing, for `stop()`.
    private struct State {
        var isStopping = false
        var wakePending = false
        var sleeper: CheckedContinuation<Void, Never>?
    }

    private let pool: PostgresPool
    private let listener: PostgresListener?
    private let configuration: Configuration
    private let logger: Logger
    private let deliver: @Sendable (OutboxEvent) async throws -> Void
    private let state = Mutex(State())
    /// The pool's wake-up while `run()` runs: publishers in this process notify through it after their commits.
    private let wakeup: OutboxWakeup

    /// Creates a dispatcher; pass `listenOn` (a connection string and loop) to wake on `Outbox.enqueue`'s NOTIFY
    /// rather than only on the poll interval.
    public init(
        pool: PostgresPool, listenOn: (connectionString: String, loop: EventLoop)? = nil,
        configuration: Configuration = Configuration(), logger: Logger = Logger(label: "outbox"),
        deliver: @escaping @Sendable (OutboxEvent) async throws -> Void
    ) {
        self.pool = pool
        self.listener = listenOn.map { PostgresListener(connectionString: $0.connectionString, loop: $0.loop) }
        self.configuration = configuration
        self.logger = logger
        self.deliver = deliver
        wakeup = OutboxWakeup(pool: pool, logger: logger.with("component", "outbox-wakeup"))
    }

    /// Delivers events until `stop()`, and meanwhile runs the pool's `OutboxWakeup` and prunes what outlived the
    /// retention every `pruneInterval`.
    ///
    /// A round under way when stopping finishes (its deliveries are marked) before this returns. Database
    /// errors are logged and retried on the next poll, never thrown.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.tick() }
            group.addTask { await self.wakeup.run() }
            group.addTask { await self.pruneEveryInterval() }
            if let listener {
                group.addTask { await self.listen(listener) }
            }
            while !isStopping {
                do {
                    while try await dispatchRound() > 0 && !isStopping {}
                } catch {
                    logger.warning("outbox round failed", [("error", "\(error)")])
                }
                await sleepUntilWoken()
            }
            listener?.shutdown()
            await listener?.waitForBackgroundWork()
            await wakeup.shutdown()
            group.cancelAll()
        }
    }

    /// Asks `run()` to return once the round under way (if any) is finished.
    public func stop() {
        state.withLock { $0.isStopping = true }
        wake()
    }

    /// Undelivered events and the age of the oldest one (zero when none), for gauges.
    public func backlog() async throws -> (pending: Int, oldestAge: Duration) {
        let rows = try await pool.execute(Self.backlogStatement)
        let row = rows.first
        let pending = try row?.decode(Int64.self, column: "pending") ?? 0
        let ageMicroseconds = try row?.decode(Int64?.self, column: "age_us")
        return (Int(pending), .microseconds(ageMicroseconds.flatMap { $0 } ?? 0))
    }

    // MARK: - Rounds

    /// Claims due events, delivers them in order, and records each outcome; returns how many it claimed.
    func dispatchRound() async throws -> Int {
        try await pool.transaction { transaction in
            let rows = try await transaction.execute(Self.claim, [configuration.batchSize])
            let events = try rows.map { row in
                OutboxEvent(
                    sequence: try row.decode(column: "id"), eventID: try row.decode(column: "event_id"),
                    topic: try row.decode(column: "topic"), key: try row.decode(column: "key"),
                    payload: try row.decode(column: "payload"),
                    previousAttempts: Int(try row.decode(Int32.self, column: "attempts")),
                    createdAt: try row.decode(column: "created_at"))
            }
            for event in events {
                do {
                    try await deliver(event)
                    try await transaction.execute(Self.markDelivered, [event.sequence])
                } catch let error as PostgresError {
                    throw error
                } catch {
                    let delay = retryDelay(afterAttempts: event.previousAttempts + 1)
                    logger.notice(
                        "outbox delivery failed",
                        [("event_id", "\(event.eventID)"), ("topic", event.topic), ("error", "\(error)")])
                    try await transaction.execute(
                        Self.scheduleRetry, [event.sequence, Int64(delay / .microseconds(1)), "\(error)"])
                }
            }
            return events.count
        }
    }

    /// Exponential backoff with "equal jitter": half the delay fixed, half random, so replicas spread out.
    func retryDelay(afterAttempts attempts: Int) -> Duration {
        let exponent = min(max(attempts - 1, 0), 30)
        let base = min(configuration.initialBackoff * (1 << exponent), configuration.maximumBackoff)
        return base / 2 + base / 2 * Double.random(in: 0...1)
    }

    // MARK: - Pruning

    /// Rows one prune statement deletes.
    static let pruneBatchSize = 1000

    /// Deletes the events delivered longer than the retention ago; returns how many went.
    ///
    /// Undelivered events stay, however old. Each statement deletes one batch, so none holds many locks or runs long.
    public func prune() async throws -> Int {
        let retention = Int64(configuration.retention / .microseconds(1))
        var deleted = 0
        while true {
            let rows = try await pool.execute(Self.pruneDelivered, [retention, Self.pruneBatchSize]).affectedRowCount
            deleted += rows
            if rows < Self.pruneBatchSize { return deleted }
        }
    }

    private func pruneEveryInterval() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: configuration.pruneInterval)
                let deleted = try await prune()
                if deleted > 0 { logger.info("outbox pruned", [("delivered_events", "\(deleted)")]) }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("outbox prune failed", [("error", "\(error)")])
            }
        }
    }

    // MARK: - Waking

    private var isStopping: Bool { state.withLock { $0.isStopping } }

    private func wake() {
        let sleeper = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let sleeper = state.sleeper else {
                state.wakePending = true
                return nil
            }
            state.sleeper = nil
            return sleeper
        }
        sleeper?.resume()
    }

    private func sleepUntilWoken() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.wakePending || state.isStopping {
                    state.wakePending = false
                    return true
                }
                state.sleeper = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func tick() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: configuration.pollInterval)
            wake()
        }
    }

    private func listen(_ listener: PostgresListener) async {
        do {
            for await _ in try await listener.notifications(channel: Outbox.channel) { wake() }
        } catch {
            // Polling still delivers everything; NOTIFY only shortens the wait.
            logger.warning("outbox listener unavailable, polling only", [("error", "\(error)")])
        }
    }

    // MARK: - SQL

    /// Due, undelivered events with no undelivered predecessor of the same key, oldest first; rows another
    /// dispatcher holds are skipped rather than waited for.
    static let claim = PostgresStatement(
        name: "outbox_claim",
        sql: """
            SELECT id, event_id, topic, key, payload, attempts, created_at FROM outbox_events AS event
            WHERE delivered_at IS NULL AND next_attempt_at <= now()
              AND NOT EXISTS (
                SELECT 1 FROM outbox_events AS earlier
                WHERE earlier.key = event.key AND earlier.delivered_at IS NULL AND earlier.id < event.id)
            ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
            """)
    static let markDelivered = PostgresStatement(
        name: "outbox_mark_delivered",
        sql: "UPDATE outbox_events SET delivered_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = $1")
    static let scheduleRetry = PostgresStatement(
        name: "outbox_schedule_retry",
        sql: """
            UPDATE outbox_events SET attempts = attempts + 1, last_error = $3,
                next_attempt_at = now() + $2 * interval '1 microsecond'
            WHERE id = $1
            """)
    static let pruneDelivered = PostgresStatement(
        name: "outbox_prune_delivered",
        sql: """
            DELETE FROM outbox_events WHERE id IN (
                SELECT id FROM outbox_events WHERE delivered_at < now() - $1 * interval '1 microsecond' LIMIT $2)
            """)
    static let backlogStatement = PostgresStatement(
        name: "outbox_backlog",
        sql: """
            SELECT count(*) AS pending,
                (extract(epoch FROM now() - min(created_at)) * 1000000)::int8 AS age_us
            FROM outbox_events WHERE delivered_at IS NULL
            """)
}
