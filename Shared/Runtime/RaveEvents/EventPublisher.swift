import RaveOutbox
import RavePostgres
import RaveRuntime
import RaveTelemetry
import RaveTransport

/// Sends the events a service wrote with `EventOutbox.publish` to its sinks: an `OutboxDispatcher` over the
/// service's outbox whose delivery is `EventSinks.deliver`, run by the runtime as a background service.
///
/// An event whose sinks do not all acknowledge is retried with backoff, holding back later events of its key
/// (and only those), so each sink sees the events of one key in order.
public final class EventPublisher: Service {
    public let name = "event-publisher"
    private let dispatcher: OutboxDispatcher
    private let sinks: EventSinks

    /// Creates the publisher; pass `listenOn` (the database URL and a loop) to wake at each publishing commit
    /// rather than on the dispatcher's poll interval.
    public init(
        pool: PostgresPool, sinks: EventSinks, listenOn: (connectionString: String, loop: EventLoop)? = nil,
        dispatcherConfiguration: OutboxDispatcher.Configuration = .init(), logger: Logger
    ) {
        self.sinks = sinks
        dispatcher = OutboxDispatcher(
            pool: pool, listenOn: listenOn, configuration: dispatcherConfiguration,
            logger: logger.with("component", "event-publisher")
        ) { event in
            try await sinks.deliver(event)
        }
    }

    /// The publisher of a service: its pool and database URL, and the sinks of `RAVE_EVENT_SINKS` reached with
    /// its certificate; `source` is the service's name as events carry it.
    public static func forService(context: ServiceContext, source: String) throws -> EventPublisher {
        let sinks = try EventSinks.fromEnvironment(context: context, source: source)
        return EventPublisher(
            pool: context.pool, sinks: sinks,
            listenOn: context.configuration.databaseURL.map { ($0, context.group.next()) }, logger: context.logger)
    }

    public func run() async throws {
        await dispatcher.run()
        sinks.close()
    }

    public func shutdown() async {
        dispatcher.stop()
    }

    /// Undelivered events and the age of the oldest, for gauges and tests.
    public func backlog() async throws -> (pending: Int, oldestAge: Duration) {
        try await dispatcher.backlog()
    }
}
