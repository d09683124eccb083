import RavePostgres
import RaveTelemetry
import Synchronization

/// Wakes the outbox's dispatchers after commits that wrote events, with at most one NOTIFY per `interval`.
///
/// A transaction that notifies takes PostgreSQL's notify lock at commit and holds it through its WAL flush, so
/// notifying commits queue behind one another and never share a flush. Publishers therefore commit without a
/// NOTIFY and report the commit (`Outbox.enqueue` does it through `PostgresTransaction.afterCommit`); `run()`
/// turns each burst of reports into one `pg_notify` in a transaction of its own. The events are durable before the
/// wake-up is asked for, so a lost wake-up (a crash, a failed NOTIFY) only delays them until the dispatchers' next
/// poll.
///
/// Every `OutboxDispatcher` runs one for its pool; while it runs it is the pool's wake-up
/// (`Outbox.eventsCommitted(on:)`).
public final class OutboxWakeup: Sendable {
    private struct State {
        var pending = false
        var isStopping = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    static let notify = PostgresStatement(name: "outbox_wakeup", sql: "SELECT pg_notify('\(Outbox.channel)', '')")

    /// The running wake-ups by pool, so a publisher finds its pool's.
    private static let running = Mutex<[ObjectIdentifier: [OutboxWakeup]]>([:])

    private let pool: PostgresPool
    private let interval: Duration
    private let logger: Logger
    private let state = Mutex(State())

    /// `interval` bounds the NOTIFY rate and is the most a wake-up waits behind the previous one.
    public init(pool: PostgresPool, interval: Duration = .milliseconds(10), logger: Logger) {
        self.pool = pool
        self.interval = interval
        self.logger = logger
    }

    /// The wake-up running for `pool` in this process, if any.
    static func running(for pool: PostgresPool) -> OutboxWakeup? {
        running.withLock { $0[ObjectIdentifier(pool)]?.first }
    }

    /// Whether a wake-up runs for `pool` in this process (publishers then notify after their commits).
    public static func isRunning(for pool: PostgresPool) -> Bool {
        running(for: pool) != nil
    }

    /// Asks for a wake-up: call it after the commit of a transaction that wrote outbox events.
    public func eventsCommitted() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Notifies once per burst of commits until `shutdown()`; meanwhile it is the pool's wake-up.
    public func run() async {
        let key = ObjectIdentifier(pool)
        Self.running.withLock { $0[key, default: []].append(self) }
        while await nextWakeup() {
            do {
                try await pool.execute(Self.notify)
            } catch {
                logger.warning("outbox wake-up failed; dispatchers will poll", [("error", "\(error)")])
            }
            // Commits during the pause share the next NOTIFY.
            try? await Task.sleep(for: interval)
        }
        Self.running.withLock { running in
            running[key]?.removeAll { $0 === self }
            if running[key]?.isEmpty == true { running[key] = nil }
        }
    }

    /// Makes `run()` return.
    public func shutdown() async {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.isStopping = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits until a wake-up is pending (true) or the service stops (false).
    private func nextWakeup() async -> Bool {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                guard !state.isStopping, !state.pending else { return true }
                state.waiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
        return state.withLock { state in
            state.pending = false
            return !state.isStopping
        }
    }
}
