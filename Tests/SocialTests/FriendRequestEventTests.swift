import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@testable import Social

/// An event sink that keeps what it is sent, as push would receive it.
final class RecordingFriendEventSink: EventsV1.EventSinkHandler {
    private let received = Mutex<[EventsV1.Event]>([])

    var events: [EventsV1.Event] { received.withLock { $0 } }

    func deliverEvents(
        _ request: EventsV1.DeliverEventsRequest, context: RequestContext
    ) async throws -> EventsV1.DeliverEventsResponse {
        received.withLock { $0.append(contentsOf: request.events) }
        return EventsV1.DeliverEventsResponse(handled: UInt32(request.events.count))
    }
}

@Suite("Friend request events")
struct FriendRequestEventTests {
    /// A new request reaches the RAVE_EVENT_SINKS sink over mutual TLS, once: a repeated request and the
    /// request that accepts a crossed one publish nothing.
    @Test func newRequestReachesTheSinkOnce() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let certificates = harness.certificates
            let sink = RecordingFriendEventSink()
            let sinkServer = RPCServer(
                services: [sink], access: TrustModel.backend,
                tls: try TLSContext(
                    .server(
                        certificateChainPath: "\(certificates)/push.pem",
                        privateKeyPath: "\(certificates)/push-key.pem",
                        trustRootsPath: "\(certificates)/ca.pem", requireClientCertificate: true)),
                group: SocialHarness.group, logger: Logger(label: "sink", level: .critical))
            try sinkServer.start()
            try await SocialHarness.withDatabase(prefix: "rave_social_events_") { url in
                let runtime = try await ServiceRuntime.start(
                    name: "social",
                    environment: [
                        "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:0",
                        "RAVE_ADMIN_LISTEN": "127.0.0.1:0", "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning",
                        "RAVE_SHUTDOWN_GRACE": "1s", "RAVE_DATABASE_URL": url, "RAVE_DB_POOL_SIZE": "4",
                        "RAVE_SOCIAL_IDENTITY_ADDRESS": "127.0.0.1:\(harness.identityPort)",
                        "RAVE_EVENT_SINKS": "push=127.0.0.1:\(sinkServer.localPort)",
                    ], migrations: .directory(SocialHarness.socialMigrations)
                ) { context in
                    try await SocialMain.services(context: context)
                }
                let running = Task { try await runtime.run() }
                let clientGroup = try EventLoopGroup(loopCount: 1)
                let connection = RPCClient(
                    host: "127.0.0.1", port: runtime.rpcPort,
                    tls: try SocialHarness.clientTLS(certificates, name: "gateway"), group: clientGroup)
                let player = SocialV1.SocialClient(caller: connection)
                func asPlayer(_ user: SocialHarness.Player) -> CallOptions {
                    CallOptions(
                        timeout: .seconds(10),
                        metadata: [
                            MetadataKey.callerUserID: user.id, MetadataKey.callerAppID: harness.appID,
                            MetadataKey.callerScopes: "player",
                        ])
                }
                do {
                    let before = Date().timeIntervalSince1970 * 1000
                    let sent = try await player.sendFriendRequest(
                        .init(listKey: "friends", target: byID(bob)), options: asPlayer(alice))
                    #expect(sent.outcome == .sent)
                    let again = try await player.sendFriendRequest(
                        .init(listKey: "friends", target: byID(bob)), options: asPlayer(alice))
                    #expect(again.outcome == .sent)
                    let crossed = try await player.sendFriendRequest(
                        .init(listKey: "friends", target: byID(alice)), options: asPlayer(bob))
                    #expect(crossed.outcome == .accepted)
                    // Delivery is asynchronous (the outbox's dispatcher); wait for it, bounded so a failure cannot hang.
                    for _ in 0..<300 where sink.events.isEmpty {
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    // A duplicate would be delivered right behind the first (same key, in order): give it a moment.
                    try await Task.sleep(for: .milliseconds(500))
                    let events = sink.events
                    #expect(events.count == 1)
                    if let event = events.first {
                        #expect(event.topic == "social.friend_request_received")
                        #expect(event.key == bob.id)
                        #expect(event.source == "social")
                        let payload = try SocialV1.FriendRequestReceivedEvent(protobufBytes: event.payload)
                        #expect(payload.recipientId == bob.id && payload.senderId == alice.id)
                        #expect(payload.appId == harness.appID && payload.listId == "friends")
                        #expect(payload.senderDisplayName == "Alice")
                        #expect(Double(payload.sentAtUnixMs) >= before - 60_000)
                    }
                } catch {
                    Issue.record("call failed: \(error)")
                }
                connection.close()
                runtime.triggerShutdown()
                try await running.value
                clientGroup.shutdown()
            }
            await sinkServer.shutdown()
        }
    }
}
