import RaveMessages
import RaveOutbox
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import Synchronization

/// The receiving side of domain events: serves `rave.events.v1.EventSink/DeliverEvents` to other services.
///
/// Each event runs `handle` in its own transaction together with `ProcessedEvents.markProcessed`, so an event
/// is handled exactly once however often it is delivered; `handle` returns whether the sink consumes the
/// event's topic (an ignored event leaves no trace). Events are handled in the batch's order and the first
/// failure fails the call: the publisher retries the batch, skipping the events already committed.
public final class EventSinkService: EventsV1.EventSinkHandler {
    /// Handles one new event inside `transaction`; returns false for a topic the sink does not consume.
    public typealias Handler = @Sendable (EventsV1.Event, PostgresTransaction) async throws -> Bool

    private let pool: PostgresPool
    private let logger: Logger
    private let handle: Handler
    /// When the next delivery also forgets old processed ids (`ProcessedEvents.pruneBatch`).
    private let nextPrune = Mutex(ContinuousClock.now)
    /// How often processed ids are pruned once nothing is left to prune.
    static let pruneInterval: Duration = .seconds(3600)

    /// A sink storing processed event ids in `pool`'s database (its migrations need `Outbox.migration`'s
    /// `processed_events` table).
    public init(pool: PostgresPool, logger: Logger, handle: @escaping Handler) {
        self.pool = pool
        self.logger = logger.with("component", "event-sink")
        self.handle = handle
    }

    /// The sink of a service, on the service's own pool and logger; add it to the RPC services the setup closure
    /// returns.
    public static func forService(context: ServiceContext, handle: @escaping Handler) -> EventSinkService {
        EventSinkService(pool: context.pool, logger: context.logger, handle: handle)
    }

    public func deliverEvents(
        _ request: EventsV1.DeliverEventsRequest, context: RequestContext
    ) async throws -> EventsV1.DeliverEventsResponse {
        var eventIDs: [RaveID] = []
        for event in request.events {
            // A publisher speaks for itself only: a service's certificate cannot deliver another's events.
            if let publisher = context.peer.role?.serviceName, event.source != publisher {
                throw RPCError.permissionDenied(
                    "service/\(publisher) may deliver only its own events, not events of \"\(event.source.prefix(64))\""
                )
            }
            guard let eventID = RaveID(event.eventId), event.eventId.count == 32 else {
                throw RPCError.invalidArgument(
                    "event_id must be 32 lowercase hex digits, got \"\(event.eventId.prefix(64))\"")
            }
            eventIDs.append(eventID)
        }
        var handled: UInt32 = 0
        for (event, eventID) in zip(request.events, eventIDs) {
            if try await handleOnce(event, eventID: eventID) { handled += 1 }
        }
        await pruneIfDue()
        return EventsV1.DeliverEventsResponse(handled: handled)
    }

    /// One batch of old processed ids, at most hourly, or on every delivery while whole batches go (a backlog
    /// drains a batch per delivery, so no single call pays for all of it).
    func pruneIfDue() async {
        let now = ContinuousClock.now
        guard nextPrune.withLock({ $0 <= now }) else { return }
        nextPrune.withLock { $0 = now + Self.pruneInterval }
        do {
            let deleted = try await ProcessedEvents.pruneBatch(in: pool)
            if deleted == ProcessedEvents.pruneBatchSize { nextPrune.withLock { $0 = now } }
        } catch {
            logger.warning("pruning processed event ids failed", [("error", "\(error)")])
        }
    }

    /// Handles `event` unless it was handled before; true when it was new and consumed.
    private func handleOnce(_ event: EventsV1.Event, eventID: RaveID) async throws -> Bool {
        do {
            return try await pool.transaction { transaction in
                guard try await ProcessedEvents.markProcessed(eventID, in: transaction) else { return false }
                guard try await handle(event, transaction) else { throw IgnoredEvent() }
                return true
            }
        } catch is IgnoredEvent {
            // Rolled back: remembering ignored topics would only grow processed_events.
            return false
        } catch {
            logger.warning(
                "event handling failed",
                [("event_id", event.eventId), ("topic", event.topic), ("source", event.source), ("error", "\(error)")])
            throw error
        }
    }
}

/// Thrown inside the transaction to roll back the processed mark of an event the sink does not consume.
private struct IgnoredEvent: Error {}
