import RaveMessages
import RaveOutbox
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTransport

/// The services a publisher sends its events to, each over mTLS with the publisher's own certificate.
///
/// Every sink receives every event (a sink acknowledges and ignores topics it does not consume), and an event
/// counts as delivered only when all sinks acknowledged it: a failing sink makes the outbox retry the event for
/// all of them, which the others absorb by deduplicating on the event id. See docs/events.md for why.
public final class EventSinks: Sendable {
    private struct Sink: Sendable {
        let address: EventSinkAddress
        let client: EventsV1.EventSinkClient
        let connection: RPCClient
    }

    private let sinks: [Sink]
    private let source: String
    private let callTimeout: Duration
    private let logger: Logger

    /// Connects lazily to `addresses` with `tls` (a client context carrying the publisher's certificate);
    /// `source` names the publishing service in every event.
    public init(
        addresses: [EventSinkAddress], source: String, tls: TLSContext, group: EventLoopGroup,
        callTimeout: Duration = .seconds(10), logger: Logger
    ) {
        sinks = addresses.map { address in
            var configuration = RPCClient.Configuration()
            configuration.connectionCount = 1
            let connection = RPCClient(
                host: address.host, port: address.port, tls: tls, group: group, configuration: configuration,
                logger: logger.with("sink", address.name))
            return Sink(address: address, client: EventsV1.EventSinkClient(caller: connection), connection: connection)
        }
        self.source = source
        self.callTimeout = callTimeout
        self.logger = logger
    }

    /// The sinks of `RAVE_EVENT_SINKS`, reached with the service's own certificate (`RAVE_CERT_DIR`).
    public static func fromEnvironment(context: ServiceContext, source: String) throws -> EventSinks {
        let addresses = try EventSinkAddress.parseList(
            context.environment[EventSinkAddress.environmentVariable] ?? "")
        let configuration = context.configuration
        let tls = try TLSContext(
            .client(
                trustRootsPath: configuration.tlsCertificateAuthorityPath,
                certificateChainPath: configuration.tlsCertificatePath,
                privateKeyPath: configuration.tlsPrivateKeyPath))
        let logger = context.logger.with("component", "event-sinks")
        if addresses.isEmpty {
            logger.notice("no event sinks configured: events are marked delivered without a receiver")
        } else {
            logger.info("event sinks", [("sinks", addresses.map(\.description).joined(separator: ","))])
        }
        return EventSinks(
            addresses: addresses, source: source, tls: tls, group: context.group, logger: logger)
    }

    /// The configured sinks, in order.
    public var addresses: [EventSinkAddress] { sinks.map(\.address) }

    /// Sends `event` to every sink and returns once all acknowledged; throws `EventsError.sinkFailed` naming
    /// each sink that did not.
    public func deliver(_ event: OutboxEvent) async throws {
        try await deliver([event])
    }

    /// Sends `events` (in order, as one `DeliverEvents` call) to every sink, concurrently; returns once all
    /// acknowledged the whole batch.
    public func deliver(_ events: [OutboxEvent]) async throws {
        guard !sinks.isEmpty, !events.isEmpty else { return }
        let request = EventsV1.DeliverEventsRequest(events: events.map(message))
        let options = CallOptions(timeout: callTimeout, maxRetries: 1)
        let failures = await withTaskGroup(of: String?.self) { group in
            for sink in sinks {
                group.addTask {
                    do {
                        _ = try await sink.client.deliverEvents(request, options: options)
                        return nil
                    } catch {
                        return "\(sink.address.name): \(error)"
                    }
                }
            }
            var failures: [String] = []
            for await failure in group {
                if let failure { failures.append(failure) }
            }
            return failures.sorted()
        }
        guard failures.isEmpty else {
            throw EventsError(.sinkFailed, failures.joined(separator: "; "))
        }
    }

    /// Closes every connection; deliveries after this fail.
    public func close() {
        for sink in sinks { sink.connection.close() }
    }

    private func message(_ event: OutboxEvent) -> EventsV1.Event {
        EventsV1.Event(
            eventId: event.eventID.hex, topic: event.topic, key: event.key, payload: event.payload,
            occurredAtUnixMs: event.createdAt.microsecondsSinceEpoch / 1000, source: source)
    }
}
