import RavePostgres
import RaveRuntime
import RaveTelemetry

/// Starts the account deletions that are due (a background service of the runtime), every `interval`.
///
/// Replicas poll side by side: each deletion is started by the first transaction that locks it (the others skip
/// it), and a deletion that failed to start is tried again at the next poll.
final class AccountDeletionPoller: Service {
    let name = "account-deletion-poller"
    private let deletions: AccountDeletions
    private let pool: PostgresPool
    private let interval: Duration
    private let logger: Logger
    private let stopped = ShutdownLatch()

    init(deletions: AccountDeletions, pool: PostgresPool, interval: Duration, logger: Logger) {
        self.deletions = deletions
        self.pool = pool
        self.interval = interval
        self.logger = logger
    }

    func run() async throws {
        let worker = Task { [interval, deletions, pool, logger] in
            while !Task.isCancelled {
                do {
                    let started = try await deletions.startDue(pool: pool)
                    if started > 0 { logger.info("started account deletions", [("started", String(started))]) }
                } catch {
                    logger.warning("could not start due account deletions", [("error", "\(error)")])
                }
                try? await Task.sleep(for: interval)
            }
        }
        await stopped.wait()
        worker.cancel()
        await worker.value
    }

    func shutdown() async {
        stopped.open()
    }
}
