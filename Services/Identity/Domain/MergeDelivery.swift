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

/// Delivers identity's outbox: merge and erasure events to the participant services until each acknowledges (the
/// second half of the merge saga and of account deletion), mails (`identity.mail`) to the SMTP server
/// (`IdentityMailer`), and every other topic (`identity.provider_linked`) to the event sinks.
///
/// Runs one `OutboxDispatcher` over identity's outbox, so every kind keeps its per-key order and shares one poller
/// (merges and erasures are keyed by participant, so a participant sees a merge into a user before its erasure).
/// A merge event calls `rave.merge.v1.MergeParticipant/MergeUsers`, an erasure event
/// `rave.erasure.v1.ErasureParticipant/EraseUser`, on the participant its key names, over mTLS with identity's own
/// certificate. A failure is recorded on the saga's participant row (visible in GetMergeStatus and
/// ListAccountDeletions) and retried with backoff; an acknowledgement completes the saga once every participant has
/// given one. Other events go to `EventSinks` (RAVE_EVENT_SINKS) and are retried until every sink acknowledged them.
final class MergeDelivery: Service {
    let name = "merge-delivery"
    private let pool: PostgresPool
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
        var clients: [String: RPCClient] = [:]
        for participant in participants {
            // Without a TLS context no participant is called (their merges fail as unconfigured, and are retried).
            guard let tls else { break }
            var configuration = RPCClient.Configuration()
            configuration.connectionCount = 1
            let client = RPCClient(
                host: participant.host, port: participant.port, tls: tls, group: group, configuration: configuration,
                logger: logger.with("participant", participant.name))
            clients[participant.name] = client
        }
        self.pool = pool
        closers = Array(clients.values)
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

    /// One delivery: a merge or erasure event calls its participant and records the outcome on the saga; any other
    /// event goes to the event sinks.
    private static func deliverer(
        pool: PostgresPool, clients: [String: RPCClient], events: EventSinks?, mail: IdentityMailer?, timeout: Duration
    ) -> @Sendable (OutboxEvent) async throws -> Void {
        { event in
            let options = CallOptions(timeout: timeout, maxRetries: 1)
            switch event.topic {
            case IdentityMail.topic:
                try await mail?.deliver(event)
            case MergeSaga.topic:
                let request = try MergeV1.MergeUsersRequest(protobufBytes: event.payload)
                guard let mergeID = RaveID(request.mergeId) else { return }
                try await call(event.key, of: mergeID, table: SagaParticipantStore.merges, clients, pool) {
                    _ = try await MergeV1.MergeParticipantClient(caller: $0).mergeUsers(request, options: options)
                }
                try await MergeStore(database: pool).acknowledge(mergeID: mergeID, participant: event.key)
            case AccountDeletions.topic:
                // The event names the deletion; what to erase is read from it (nothing once it completed).
                let named = try ErasureV1.EraseUserRequest(protobufBytes: event.payload)
                guard let deletionID = RaveID(named.erasureId),
                    let request = try await AccountDeletionStore(database: pool).erasureRequest(deletionID)
                else { return }
                try await call(event.key, of: deletionID, table: SagaParticipantStore.deletions, clients, pool) {
                    _ = try await ErasureV1.ErasureParticipantClient(caller: $0).eraseUser(request, options: options)
                }
                try await pool.transaction { transaction in
                    try await SagaParticipantStore(database: transaction, table: SagaParticipantStore.deletions)
                        .acknowledge(sagaID: deletionID, participant: event.key)
                    _ = try await AccountDeletionStore(database: transaction).completeIfAcknowledged(
                        deletionID, mergeTopic: MergeSaga.topic)
                }
            default:
                try await events?.deliver(event)
            }
        }
    }

    /// Calls `participant` for the saga `sagaID`; a failure (an unconfigured participant included) is recorded on
    /// the saga's participant row and thrown, so the outbox retries the event with backoff.
    private static func call(
        _ participant: String, of sagaID: RaveID, table: SagaParticipantStore.Table, _ clients: [String: RPCClient],
        _ pool: PostgresPool, _ body: (RPCClient) async throws -> Void
    ) async throws {
        do {
            guard let client = clients[participant] else {
                throw IdentityError.unavailable("participant \(participant) is not configured")
            }
            try await body(client)
        } catch {
            try await SagaParticipantStore(database: pool, table: table).recordFailure(
                sagaID: sagaID, participant: participant, error: "\(error)")
            throw error
        }
    }
}
