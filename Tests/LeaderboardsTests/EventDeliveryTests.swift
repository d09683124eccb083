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

@testable import Leaderboards

/// An event sink that keeps what it is sent, as push would receive it.
final class RecordingEventSink: EventsV1.EventSinkHandler {
    private let received = Mutex<[EventsV1.Event]>([])

    var events: [EventsV1.Event] { received.withLock { $0 } }

    func deliverEvents(
        _ request: EventsV1.DeliverEventsRequest, context: RequestContext
    ) async throws -> EventsV1.DeliverEventsResponse {
        // Sinks accept events only from services, as EventSinkService does.
        received.withLock { $0.append(contentsOf: request.events) }
        return EventsV1.DeliverEventsResponse(handled: UInt32(request.events.count))
    }
}

@Suite("Achievement events reach the sinks")
struct EventDeliveryTests {
    @Test("a first unlock is delivered to the RAVE_EVENT_SINKS sink over mutual TLS")
    func unlockReachesSink() async throws {
        let database = try await TestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-lb-ev-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["leaderboards", "gateway", "push"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sink = RecordingEventSink()
        let sinkServer = RPCServer(
            services: [sink], access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(directory)/push.pem", privateKeyPath: "\(directory)/push-key.pem",
                    trustRootsPath: "\(directory)/ca.pem", requireClientCertificate: true)),
            group: TestDatabase.group, logger: Logger(label: "sink", level: .critical))
        try sinkServer.start()
        let environment = [
            "RAVE_CERT_DIR": directory, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
            "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "2s",
            "RAVE_DATABASE_URL": database.url, "RAVE_EVENT_SINKS": "push=127.0.0.1:\(sinkServer.localPort)",
            "RAVE_LEADERBOARDS_SOCIAL_ADDRESS": "off", "RAVE_LEADERBOARDS_IDENTITY_ADDRESS": "off",
        ]
        let runtime = try await ServiceRuntime.start(
            name: "leaderboards", environment: environment,
            migrations: .directory(LeaderboardsMain.migrationsDirectory)
        ) { context in
            try await LeaderboardsMain.services(context: context)
        }
        let running = Task { try await runtime.run() }
        let clientGroup = try EventLoopGroup(loopCount: 1)
        let connection = RPCClient(
            host: "127.0.0.1", port: runtime.rpcPort,
            tls: try TLSContext(
                .client(
                    trustRootsPath: "\(directory)/ca.pem", certificateChainPath: "\(directory)/gateway.pem",
                    privateKeyPath: "\(directory)/gateway-key.pem")),
            group: clientGroup)
        let app = uniqueApp()
        let player = RaveID.random()
        func options(user: String, scopes: String) -> CallOptions {
            CallOptions(
                timeout: .seconds(10),
                metadata: [
                    MetadataKey.callerUserID: user, MetadataKey.callerAppID: app, MetadataKey.callerScopes: scopes,
                ])
        }
        do {
            _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: connection).defineAchievement(
                LeaderboardsV1.DefineAchievementRequest(
                    appId: app, definition: LeaderboardsV1.AchievementDefinition(key: "first-win", name: "First win")),
                options: options(user: "", scopes: "admin"))
            let unlocked = try await LeaderboardsV1.LeaderboardsClient(caller: connection).unlockAchievement(
                LeaderboardsV1.UnlockAchievementRequest(achievementKey: "first-win"),
                options: options(user: player.hex, scopes: "player authenticated"))
            #expect(unlocked.newlyUnlocked)
            // Delivery is asynchronous (the outbox's dispatcher); wait for it, bounded so a failure cannot hang.
            for _ in 0..<300 where sink.events.isEmpty {
                try await Task.sleep(for: .milliseconds(100))
            }
            let events = sink.events
            #expect(events.count == 1)
            if let event = events.first {
                #expect(event.topic == "leaderboards.achievement_unlocked")
                #expect(event.key == player.hex)
                #expect(event.source == "leaderboards")
                let payload = try LeaderboardsV1.AchievementUnlockedEvent(protobufBytes: event.payload)
                #expect(payload.userId == player.hex && payload.appId == app && payload.achievementKey == "first-win")
            }
        } catch {
            Issue.record("call failed: \(error)")
        }
        connection.close()
        runtime.triggerShutdown()
        try await running.value
        clientGroup.shutdown()
        await sinkServer.shutdown()
        try await database.drop()
    }
}
