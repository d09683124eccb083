import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTestSupport
import RaveTransport
import Testing

@testable import Push

@Suite("Push over mutual TLS")
struct PushServiceRuntimeTests {
    @Test func registerSendAndDeliverThroughTheRuntime() async throws {
        try await FakeProviders.with { server in
            try await PushFixture.with { fixture in
                try await ServiceUnderTest.with(
                    "push", peers: ["gateway", "gifts"], databaseURL: fixture.connectionString,
                    migrations: .directory(PushMain.migrationsDirectory)
                ) { context in
                    let worker = try server.worker(fixture)
                    context.addBackgroundService(worker)
                    return PushDependencies(pool: context.pool, clock: fixture.clock) { worker.wake() }.rpcServices
                } _: { push in
                    try await deliverThroughTheRuntime(push, server: server)
                }
            }
        }
    }

    /// Player calls as the gateway, internal calls and events as gifts, deliveries to the fake provider.
    private func deliverThroughTheRuntime(_ push: ServiceUnderTest, server: FakeProviders) async throws {
        let client = try push.client(as: "gateway")
        // Internal calls and events come from another service (gifts), never from the gateway.
        let gifts = try push.client(as: "gifts")
        defer {
            client.close()
            gifts.close()
        }
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
    }
}
