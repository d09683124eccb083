import RaveRuntime
import RaveTelemetry

/// Deletes the login throttle's idle counters every `interval` (a background service of the runtime), so the table
/// holds only recent failures and recently trusted pairs.
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
