import RaveOutbox
import RavePostgres
import RaveRuntime
import RaveTelemetry
import Synchronization

/// Wakes the outbox's dispatchers after commits that wrote events, with at most one NOTIFY per `interval`.
///
/// A transaction that notifies takes PostgreSQL's notify lock at commit and holds it through its WAL flush, so
/// notifying commits queue behind one another and never share a flush. Sends and accepts therefore commit
/// without a NOTIFY and call `eventsCommitted()` afterwards; `run()` turns each burst of those into one
/// `pg_notify` in a transaction of its own. The events are durable before the wake-up is asked for, so a lost
/// wake-up (a crash, a failed NOTIFY) only delays them until the dispatchers' next poll.
final class OutboxWakeup: Service {
    let name = "outbox-wakeup"

    private struct State {
        var pending = false
        var isStopping = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private static let notify = PostgresStatement(
        name: "gifts_outbox_wakeup", sql: "SELECT pg_notify('\(Outbox.channel)', '')")

    private let pool: PostgresPool
    private let interval: Duration
    private let logger: Logger
    private let state = Mutex(State())

    /// `interval` bounds the NOTIFY rate and is the most a wake-up waits behind the previous one.
    init(pool: PostgresPool, interval: Duration = .milliseconds(10), logger: Logger) {
        self.pool = pool
        self.interval = interval
        self.logger = logger
    }

    /// Asks for a wake-up: call it after the commit of a transaction that wrote outbox events.
    func eventsCommitted() {
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

    /// Notifies once per burst of commits until `shutdown()`.
    func run() async {
        while await nextWakeup() {
            do {
                try await pool.execute(Self.notify)
            } catch {
                logger.warning("outbox wake-up failed; dispatchers will poll", [("error", "\(error)")])
            }
            // Commits during the pause share the next NOTIFY.
            try? await Task.sleep(for: interval)
        }
    }

    func shutdown() async {
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
