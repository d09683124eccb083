import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTransport
import Testing

@testable import Push

@Suite("Push over mutual TLS")
struct PushServiceRuntimeTests {
    @Test func registerSendAndDeliverThroughTheRuntime() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-push-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["push", "gateway", "gifts"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await FakeProviders.with { server in
            try await PushFixture.with { fixture in
                let environment = [
                    "RAVE_CERT_DIR": directory, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
                    "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "2s",
                    "RAVE_DATABASE_URL": fixture.connectionString, "RAVE_DB_POOL_SIZE": "4",
                ]
                let runtime = try await ServiceRuntime.start(
                    name: "push", environment: environment, migrations: .directory(PushMain.migrationsDirectory)
                ) { context in
                    let worker = try server.worker(fixture)
                    context.addBackgroundService(worker)
                    return PushDependencies(pool: context.pool, clock: fixture.clock) { worker.wake() }.services()
                }
                let running = Task { try await runtime.run() }
                let group = try EventLoopGroup(loopCount: 1)
                let tls = try TLSContext(
                    .client(
                        trustRootsPath: "\(directory)/ca.pem", certificateChainPath: "\(directory)/gateway.pem",
                        privateKeyPath: "\(directory)/gateway-key.pem"))
                let client = RPCClient(host: "127.0.0.1", port: runtime.rpcPort, tls: tls, group: group)
                // Internal calls and events come from another service (gifts), never from the gateway.
                let gifts = RPCClient(
                    host: "127.0.0.1", port: runtime.rpcPort,
                    tls: try TLSContext(
                        .client(
                            trustRootsPath: "\(directory)/ca.pem", certificateChainPath: "\(directory)/gifts.pem",
                            privateKeyPath: "\(directory)/gifts-key.pem")), group: group)
                let user = RaveID.random()
                let player = CallOptions(
                    metadata: [
                        MetadataKey.callerUserID: user.hex, MetadataKey.callerAppID: PushFixture.appID,
                    ])
                let admin = CallOptions(
                    metadata: [MetadataKey.callerAppID: PushFixture.appID, MetadataKey.callerScopes: Caller.adminScope])

                let registered = try await PushV1.PushClient(caller: client).registerToken(
                    PushV1.RegisterTokenRequest(
                        platform: .apns, token: "a-ok-mtls", sandbox: true, consent: PushV1.Consent(push: true),
                        options: nil, country: "US", language: "en", timeZone: "America/New_York"),
                    options: player)
                #expect(registered.info?.userId == user.hex)
                await #expect(throws: RPCError.self) {
                    try await PushV1.PushClient(caller: client).registerToken(
                        PushV1.RegisterTokenRequest(platform: .apns, token: "", timeZone: "UTC"), options: player)
                }
                let sent = try await PushV1.PushInternalClient(caller: gifts).sendNotification(
                    PushV1.SendNotificationRequest(
                        appId: PushFixture.appID, userIds: [user.hex],
                        notification: PushV1.Notification(title: "Gift", body: "You received a gift")))
                #expect(sent.queued == 1)
                var state = PushV1.DeliveryState.pending
                for _ in 0..<100 where state != .delivered {
                    try await Task.sleep(for: .milliseconds(50))
                    let deliveries = try await PushV1.PushAdminClient(caller: client).getDeliveries(
                        PushV1.GetDeliveriesRequest(notificationId: sent.notificationId), options: admin)
                    state = deliveries.deliveries.first?.state ?? .unspecified
                }
                #expect(state == .delivered)
                #expect(try server.requestCount(token: "a-ok-mtls") == 1)

                // Another service's event, delivered twice (at least once): one notification, one push.
                let event = EventsV1.Event(
                    eventId: RaveID.random().hex, topic: "gifts.gift_received", key: user.hex,
                    payload: GiftsV1.GiftReceivedEvent(
                        giftId: "g1", appId: PushFixture.appID, recipientId: user.hex, senderDisplayName: "Alice",
                        giftTypeName: "Golden Egg"
                    ).protobufBytes(), source: "gifts")
                let events = EventsV1.EventSinkClient(caller: gifts)
                let first = try await events.deliverEvents(.init(events: [event]))
                let again = try await events.deliverEvents(.init(events: [event]))
                #expect(first.handled == 1 && again.handled == 0)
                var eventState = PushV1.DeliveryState.pending
                for _ in 0..<100 where eventState != .delivered {
                    try await Task.sleep(for: .milliseconds(50))
                    let deliveries = try await PushV1.PushAdminClient(caller: client).getDeliveries(
                        PushV1.GetDeliveriesRequest(notificationId: event.eventId), options: admin)
                    eventState = deliveries.deliveries.first?.state ?? .unspecified
                }
                #expect(eventState == .delivered)
                #expect(try server.requestCount(token: "a-ok-mtls") == 2)

                client.close()
                gifts.close()
                runtime.triggerShutdown()
                try await running.value
                group.shutdown()
            }
        }
    }
}
