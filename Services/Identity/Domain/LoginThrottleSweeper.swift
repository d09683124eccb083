import RaveRuntime
import RaveTelemetry

/// Deletes the login throttle's idle counters every `interval` (a background service of the runtime), so the table
/// holds only recent failures and recently trusted pairs; and, in the same round, expired email codes and mail
/// limit counters a day past their window.
final class LoginThrottleSweeper: Service {
    let name = "login-throttle-sweeper"
    private let throttle: LoginThrottle
    private let interval: Duration
    private let logger: Logger
    private let stopped = ShutdownLatch()

    init(throttle: LoginThrottle, interval: Duration = .seconds(300), logger: Logger) {
        self.throttle = throttle
        self.interval = interval
        self.logger = logger
    }

    func run() async throws {
        let worker = Task { [interval, throttle, logger] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { break }
                do {
                    let deleted = try await throttle.sweep()
                    logger.debug("deleted idle login throttle counters", [("deleted", String(deleted))])
                    let now = throttle.clock()
                    let codes = try await EmailCodeStore(database: throttle.pool).sweep(now: now)
                    let limits = try await MailStore(database: throttle.pool).sweep(now: now)
                    logger.debug(
                        "deleted expired email codes and mail limits",
                        [("codes", String(codes)), ("limits", String(limits))])
                } catch {
                    logger.warning("could not delete idle login throttle counters", [("error", "\(error)")])
                }
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
