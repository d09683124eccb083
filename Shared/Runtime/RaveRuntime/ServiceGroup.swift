import RaveTelemetry
import Synchronization

/// Runs services together: starts them in order, and on shutdown stops them in reverse order, one at a time,
/// waiting for each `run()` to return before asking the next to stop.
///
/// Shutdown begins when `triggerShutdown()` is called (by the signal watcher on SIGTERM/SIGINT, or by a test),
/// or when any service's `run()` returns or throws on its own: a process missing one of its parts must not keep
/// half-serving. A service that takes longer than the grace period to stop is reported as failed and the group
/// cancels the tasks still running.
public final class ServiceGroup: Sendable {
    private let services: [any Service]
    private let gracePeriod: Duration
    private let logger: Logger
    private let shutdownRequests: AsyncStream<Void>
    private let shutdownContinuation: AsyncStream<Void>.Continuation
    private let shuttingDown = Atomic<Bool>(false)

    /// - Parameters:
    ///   - services: started in this order, stopped in the reverse.
    ///   - gracePeriod: how long each service may take to stop once asked.
    public init(services: [any Service], gracePeriod: Duration = .seconds(30), logger: Logger) {
        self.services = services
        self.gracePeriod = gracePeriod
        self.logger = logger
        (shutdownRequests, shutdownContinuation) = AsyncStream<Void>.makeStream()
    }

    /// Whether shutdown has begun; readiness checks report not-ready from then on.
    public var isShuttingDown: Bool { shuttingDown.load(ordering: .acquiring) }

    /// Begins a graceful shutdown; safe from any thread, at any time, any number of times.
    public func triggerShutdown() {
        guard !shuttingDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdownContinuation.yield()
        shutdownContinuation.finish()
    }

    private enum Event: Sendable {
        case finished(index: Int, error: (any Error)?)
        case shutdownRequested
        case stopTimedOut(index: Int)
        case ignored
    }

    /// Runs every service until shutdown, then stops them; throws when any service failed or did not stop.
    public func run() async throws(RuntimeError) {
        var failures: [String] = []
        await withTaskGroup(of: Event.self) { group in
            for (index, service) in services.enumerated() {
                logger.info("starting service", [("service", service.name)])
                group.addTask {
                    do {
                        try await service.run()
                        return .finished(index: index, error: nil)
                    } catch {
                        return .finished(index: index, error: error)
                    }
                }
            }
            let requests = shutdownRequests
            group.addTask {
                for await _ in requests { return .shutdownRequested }
                return Task.isCancelled ? .ignored : .shutdownRequested
            }

            var running = Set(services.indices)
            func record(_ index: Int, _ error: (any Error)?, stopping: Bool) {
                running.remove(index)
                let name = services[index].name
                if let error {
                    failures.append("\(name): \(error)")
                    logger.error("service failed", [("service", name), ("error", "\(error)")])
                } else if !stopping {
                    failures.append("\(name): returned before shutdown was requested")
                    logger.error("service stopped unexpectedly", [("service", name)])
                } else {
                    logger.info("service stopped", [("service", name)])
                }
            }

            waiting: while let event = await group.next() {
                switch event {
                case .shutdownRequested:
                    logger.notice("shutdown requested")
                    break waiting
                case .finished(let index, let error):
                    record(index, error, stopping: false)
                    break waiting
                case .stopTimedOut, .ignored:
                    continue
                }
            }
            triggerShutdown()

            var cancelled = false
            for index in services.indices.reversed() where running.contains(index) {
                let service = services[index]
                logger.info("stopping service", [("service", service.name)])
                group.addTask {
                    await service.shutdown()
                    return .ignored
                }
                if !cancelled {
                    let gracePeriod = self.gracePeriod
                    group.addTask {
                        do {
                            try await Task.sleep(for: gracePeriod)
                            return .stopTimedOut(index: index)
                        } catch {
                            return .ignored
                        }
                    }
                }
                while running.contains(index), let event = await group.next() {
                    switch event {
                    case .finished(let finished, let error):
                        record(finished, error, stopping: true)
                    case .stopTimedOut(let timedOut) where timedOut == index && !cancelled:
                        failures.append("\(service.name): did not stop within \(gracePeriod)")
                        logger.error("service did not stop in time; cancelling", [("service", service.name)])
                        cancelled = true
                        group.cancelAll()
                    case .stopTimedOut, .shutdownRequested, .ignored:
                        continue
                    }
                }
            }
            group.cancelAll()
        }
        if !failures.isEmpty {
            throw RuntimeError(.serviceFailed, failures.joined(separator: "; "))
        }
    }
}
