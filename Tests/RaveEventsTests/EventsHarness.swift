import Foundation
import RaveEvents
import RaveMessages
import RaveOutbox
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

/// Throwaway databases with the outbox tables, development certificates, and sink servers over mTLS.
enum EventsHarness {
    static let group: EventLoopGroup = {
        do {
            return try EventLoopGroup(loopCount: 2)
        } catch {
            preconditionFailure("cannot start the test event loops: \(error)")
        }
    }()

    static let quiet = Logger(label: "events-test", level: .critical)

    /// The table sinks in these tests record consumed events in, next to `processed_events`.
    static let receivedTable = """
        CREATE TABLE received_events (event_id text PRIMARY KEY, topic text NOT NULL, key text NOT NULL,
            payload bytea NOT NULL, source text NOT NULL)
        """

    /// Runs `body` against a fresh database with the outbox tables and `received_events`, dropped afterwards.
    static func withDatabase(_ body: (PostgresPool) async throws -> Void) async throws {
        try await withDatabase(migrated: true) { pool, _ in try await body(pool) }
    }

    /// Runs `body` against a fresh database (with the tables when `migrated`) and its URL, dropped afterwards.
    static func withDatabase(migrated: Bool, _ body: (PostgresPool, String) async throws -> Void) async throws {
        try await ScratchDatabase.with(prefix: "rave_events_") { url in
            let pool = try PostgresPool(
                configuration: ScratchDatabase.poolConfiguration(url: url, size: 4), group: group)
            defer { pool.shutdown() }
            if migrated {
                try await pool.withConnection { connection in
                    try await connection.runScript(Outbox.migration)
                    try await connection.runScript(receivedTable)
                }
            }
            try await body(pool, url)
        }
    }

    /// Writes a CA and leaves for "publisher" and "sink" (and, for the runtime test, "identity" and "gifts")
    /// into a temporary directory for `body`.
    static func withCertificates(_ body: (String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-events-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["publisher", "sink", "identity", "gifts"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await body(directory)
    }

    static func clientTLS(_ certificates: String, name: String = "publisher") throws -> TLSContext {
        try TLSContext(
            .client(
                trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/\(name).pem",
                privateKeyPath: "\(certificates)/\(name)-key.pem"))
    }

    /// The sink's port admits the "publisher" certificate's service role to EventSink, and nothing else.
    static let sinkPolicy = AccessPolicy(
        services: [EventsV1.EventSinkClient.serviceName: .roles([.service("publisher")])], otherwise: .roles([]),
        callerMetadataFrom: [])

    /// An mTLS server for `sink` on `port` (0 picks one); started.
    static func startSink(_ sink: any RPCService, certificates: String, port: Int = 0) throws -> RPCServer {
        var configuration = RPCServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = port
        let server = RPCServer(
            configuration: configuration, services: [sink], access: EventsHarness.sinkPolicy,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(certificates)/sink.pem", privateKeyPath: "\(certificates)/sink-key.pem",
                    trustRootsPath: "\(certificates)/ca.pem", requireClientCertificate: true)),
            group: group, logger: quiet)
        try server.start()
        return server
    }

    /// A sink that records "test.*" events in `received_events` and ignores every other topic.
    static func recordingSink(pool: PostgresPool, failures: FailureBudget = FailureBudget(0)) -> EventSinkService {
        EventSinkService(pool: pool, logger: quiet) { event, transaction in
            guard event.topic.hasPrefix("test.") else { return false }
            try failures.spend()
            try await transaction.query(
                PostgresQuery(
                    "INSERT INTO received_events VALUES ($1, $2, $3, $4, $5)",
                    [event.eventId, event.topic, event.key, event.payload, event.source]))
            return true
        }
    }

    /// A publisher from `pool`'s outbox to `sinks`, polling often and retrying quickly.
    static func publisher(pool: PostgresPool, sinks: EventSinks) -> EventPublisher {
        var dispatcher = OutboxDispatcher.Configuration()
        dispatcher.pollInterval = .milliseconds(50)
        dispatcher.initialBackoff = .milliseconds(20)
        dispatcher.maximumBackoff = .milliseconds(200)
        return EventPublisher(pool: pool, sinks: sinks, dispatcherConfiguration: dispatcher, logger: quiet)
    }

    /// Waits until `condition` holds, up to 20 s; returns whether it did.
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(25))
        }
        return try await condition()
    }

    static func count(_ table: String, in pool: PostgresPool) async throws -> Int {
        let rows = try await pool.query(PostgresQuery("SELECT count(*) AS n FROM \(table)"))
        return Int(try rows.first?.decode(Int64.self, column: "n") ?? 0)
    }
}

/// Makes a sink fail its first handlings, like a sink whose database hiccups.
final class FailureBudget: Sendable {
    private let remaining: Mutex<Int>

    init(_ failures: Int) {
        remaining = Mutex(failures)
    }

    func spend() throws {
        let fail = remaining.withLock { remaining in
            guard remaining > 0 else { return false }
            remaining -= 1
            return true
        }
        if fail { throw RPCError.unavailable("failing on purpose") }
    }
}
