import Foundation
import RaveEvents
import RaveMessages
import RaveOutbox
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTransport

/// Delivers identity's outbox: merge events to the participant services until each acknowledges (the second half
/// of the merge saga), mails (`identity.mail`) to the SMTP server (`IdentityMailer`), and every other topic
/// (`identity.provider_linked`) to the event sinks.
///
/// Runs one `OutboxDispatcher` over identity's outbox, so both kinds keep their per-key order and share one poller.
/// A merge event calls `rave.merge.v1.MergeParticipant/MergeUsers` on the participant its key names, over mTLS with
/// identity's own certificate. A failure is recorded on the merge's participant row (visible in GetMergeStatus) and
/// retried with backoff; an acknowledgement completes the merge once every participant has given one. Other events
/// go to `EventSinks` (RAVE_EVENT_SINKS) and are retried until every sink acknowledged them.
final class MergeDelivery: Service {
    let name = "merge-delivery"
    private let pool: PostgresPool
    private let clients: [String: MergeV1.MergeParticipantClient]
    private let closers: [RPCClient]
    private let events: EventSinks?
    private let dispatcher: OutboxDispatcher
    private let callTimeout: Duration

    /// Creates the delivery worker; `tls` is a client context carrying identity's certificate; without `events`,
    /// events other than merges are marked delivered without a receiver.
    init(
        pool: PostgresPool, participants: [IdentityConfiguration.MergeParticipant], events: EventSinks? = nil,
        mail: IdentityMailer? = nil, tls: TLSContext?,
        group: EventLoopGroup, listenOn databaseURL: String? = nil,
        dispatcherConfiguration: OutboxDispatcher.Configuration = .init(), callTimeout: Duration = .seconds(10),
        logger: Logger
    ) {
        var clients: [String: MergeV1.MergeParticipantClient] = [:]
        var closers: [RPCClient] = []
        for participant in participants {
            // Without a TLS context no participant is called (their merges fail as unconfigured, and are retried).
            guard let tls else { break }
            var configuration = RPCClient.Configuration()
            configuration.connectionCount = 1
            let client = RPCClient(
                host: participant.host, port: participant.port, tls: tls, group: group, configuration: configuration,
                logger: logger.with("participant", participant.name))
            closers.append(client)
            clients[participant.name] = MergeV1.MergeParticipantClient(caller: client)
        }
        self.pool = pool
        self.clients = clients
        self.closers = closers
        self.callTimeout = callTimeout
        self.events = events
        let deliver = Self.deliverer(pool: pool, clients: clients, events: events, mail: mail, timeout: callTimeout)
        // LISTEN wakes the dispatcher at a merge's commit; without it, merges wait for the next poll.
        dispatcher = OutboxDispatcher(
            pool: pool, listenOn: databaseURL.map { ($0, group.next()) }, configuration: dispatcherConfiguration,
            logger: logger.with("component", "merge-delivery"),
            deliver: deliver)
    }

    /// The delivery worker the runtime runs next to the RPC server, with identity's certificate for mTLS.
    static func forService(
        context: ServiceContext, participants: [IdentityConfiguration.MergeParticipant], mail: IdentityMailer
    ) throws -> MergeDelivery {
        let configuration = context.configuration
        let tls = try TLSContext(
            .client(
                trustRootsPath: configuration.tlsCertificateAuthorityPath,
                certificateChainPath: configuration.tlsCertificatePath,
                privateKeyPath: configuration.tlsPrivateKeyPath))
        let events = try EventSinks.fromEnvironment(context: context, source: "identity")
        return MergeDelivery(
            pool: context.pool, participants: participants, events: events, mail: mail, tls: tls,
            group: context.group, listenOn: configuration.databaseURL, logger: context.logger)
    }

    func run() async throws {
        await dispatcher.run()
        for client in closers { client.close() }
        events?.close()
    }

    func shutdown() async {
        dispatcher.stop()
    }

    /// One delivery: a merge event calls its participant and records the outcome on the merge; any other event
    /// goes to the event sinks.
    private static func deliverer(
        pool: PostgresPool, clients: [String: MergeV1.MergeParticipantClient], events: EventSinks?,
        mail: IdentityMailer?, timeout: Duration
    ) -> @Sendable (OutboxEvent) async throws -> Void {
        { event in
            if event.topic == IdentityMail.topic {
                try await mail?.deliver(event)
                return
            }
            guard event.topic == MergeSaga.topic else {
                try await events?.deliver(event)
                return
            }
            let request = try MergeV1.MergeUsersRequest(protobufBytes: event.payload)
            guard let mergeID = RaveID(request.mergeId) else { return }
            let store = MergeStore(database: pool)
            do {
                guard let client = clients[event.key] else {
                    throw IdentityError.unavailable("merge participant \(event.key) is not configured")
                }
                _ = try await client.mergeUsers(request, options: CallOptions(timeout: timeout, maxRetries: 1))
            } catch {
                try await store.recordFailure(mergeID: mergeID, participant: event.key, error: "\(error)")
                throw error
            }
            try await store.acknowledge(mergeID: mergeID, participant: event.key)
        }
    }
}
