import Foundation
import RaveMessages
import RavePostgres
import RaveTelemetry
import Testing

@testable import Push

@Suite("Delivery to APNs and FCM over HTTP/2")
struct DeliveryTests {
    /// Runs the worker, moving the clock `step` seconds between batches, until nothing is pending or held.
    func drain(_ worker: DeliveryWorker, _ fixture: PushFixture, step: TimeInterval = 2, rounds: Int = 12) async throws
    {
        for _ in 0..<rounds {
            try await worker.runOnce()
            let open = try await fixture.pool.query("SELECT count(*) FROM deliveries WHERE state IN (1, 2)")
            if try open[0].decode(Int64.self, at: 0) == 0 { return }
            fixture.clock.advance(by: step)
        }
    }

    func states(_ fixture: PushFixture, _ id: RaveID) async throws -> [String: PushV1.Delivery] {
        Dictionary(uniqueKeysWithValues: try await fixture.deliveries(id.hex).map { ($0.token, $0) })
    }

    @Test func successRetriesAndDeadTokens() async throws {
        try await FakeProviders.with { server in
            try await PushFixture.with { fixture in
                let user = RaveID.random()
                let fcmTokens = ["f-ok", "f-retry", "f-flaky", "f-gone", "f-bad"]
                let apnsTokens = ["a-ok", "a-retry", "a-flaky", "a-gone", "a-gone-past", "a-bad"]
                for token in fcmTokens { try await fixture.register(user, token: token, platform: .fcm) }
                for token in apnsTokens { try await fixture.register(user, token: token, platform: .apns) }
                let id = RaveID.random()
                #expect(try await fixture.send([user], id: id).queued == 11)
                let worker = try server.worker(fixture)
                let start = fixture.clock.now()
                try await worker.runOnce()
                // The 429 carried retry-after: 1, which wins over the (much shorter) computed backoff.
                let retryAt = try await fixture.pool.query(
                    "SELECT next_attempt_at FROM deliveries WHERE token = 'a-retry'")
                #expect(try retryAt[0].decode(Date.self, at: 0) == start.addingTimeInterval(1))
                try await drain(worker, fixture)
                let deliveries = try await states(fixture, id)
                for token in ["f-ok", "a-ok"] {
                    #expect(deliveries[token]?.state == .delivered && deliveries[token]?.attempts == 1, "\(token)")
                }
                for token in ["f-retry", "f-flaky", "a-retry", "a-flaky"] {
                    #expect(deliveries[token]?.state == .delivered && deliveries[token]?.attempts == 2, "\(token)")
                    #expect(try server.requestCount(token: token) == 2)
                }
                for token in ["f-gone", "f-bad", "a-gone", "a-gone-past", "a-bad"] {
                    #expect(deliveries[token]?.state == .failed, "\(token)")
                }
                #expect(deliveries["a-bad"]?.lastResult == "400 BadDeviceToken")
                #expect(deliveries["f-gone"]?.lastResult == "404 UNREGISTERED")
                let remaining = try await fixture.service.getTokenInfo(
                    PushV1.GetTokenInfoRequest(), context: PushFixture.playerContext(user)
                ).tokens.map(\.token).sorted()
                // a-gone-past was declared dead in 1970, before it was registered: it stays.
                #expect(remaining == ["a-flaky", "a-gone-past", "a-ok", "a-retry", "f-flaky", "f-ok", "f-retry"])
                // One OAuth2 token served every FCM request.
                #expect(try server.requests().filter { $0.path == "/token" }.count == 1)
            }
        }
    }

    @Test func retriesStopAtTheTimeToLive() async throws {
        try await FakeProviders.with { server in
            try await PushFixture.with { fixture in
                let user = RaveID.random()
                try await fixture.register(user, token: "f-down", platform: .fcm)
                let id = RaveID.random()
                _ = try await fixture.send([user], id: id)  // TTL one hour
                let worker = try server.worker(fixture, backoffBase: 600)
                try await drain(worker, fixture, step: 1200)
                let delivery = try await states(fixture, id)["f-down"]
                #expect(delivery?.state == .expired)
                #expect((2...4).contains(delivery?.attempts ?? 0))
            }
        }
    }

    @Test func restartResumesDeliveriesAClaimingWorkerLeftBehind() async throws {
        try await FakeProviders.with { server in
            try await PushFixture.with { fixture in
                let user = RaveID.random()
                try await fixture.register(user, token: "a-ok-resume", platform: .apns)
                let id = RaveID.random()
                _ = try await fixture.send([user], id: id)
                // A worker claims the delivery and dies before sending.
                let now = fixture.clock.now()
                let claimed = try await DeliveryStore().claim(
                    now: now, leaseEnd: now.addingTimeInterval(60), limit: 10, on: fixture.pool)
                #expect(claimed.count == 1)
                let worker = try server.worker(fixture)
                #expect(try await worker.runOnce() == 0)
                fixture.clock.advance(by: 61)
                #expect(try await worker.runOnce() == 1)
                #expect(try await states(fixture, id)["a-ok-resume"]?.state == .delivered)
                #expect(try server.requestCount(token: "a-ok-resume") == 1)
            }
        }
    }

    @Test func heldAdvertisingGoesOutInTheMorning() async throws {
        try await FakeProviders.with { server in
            try await PushFixture.with(now: utc(2026, 1, 1, 23)) { fixture in
                let user = RaveID.random()
                try await fixture.register(
                    user, token: "f-ok-morning", platform: .fcm, timeZone: "Europe/London",
                    consent: PushV1.Consent(push: true, advertising: true, nightAdvertising: false))
                let id = RaveID.random()
                let notification = PushV1.Notification(
                    title: "Sale", body: "50% off", category: .advertising, ttlSeconds: 86400)
                let sent = try await fixture.admin.sendNotification(
                    PushV1.SendNotificationRequest(
                        appId: PushFixture.appID, userIds: [user.hex], notification: notification,
                        notificationId: id.hex),
                    context: PushFixture.adminContext())
                #expect(sent.held == 1)
                let worker = try server.worker(fixture)
                #expect(try await worker.runOnce() == 0)
                fixture.clock.set(utc(2026, 1, 2, 8))
                #expect(try await worker.runOnce() == 1)
                #expect(try await states(fixture, id)["f-ok-morning"]?.state == .delivered)
            }
        }
    }

    @Test func unregisteredTokenIsSkippedNotSent() async throws {
        try await FakeProviders.with { server in
            try await PushFixture.with { fixture in
                let user = RaveID.random()
                try await fixture.register(user, token: "f-ok-left", platform: .fcm)
                let id = RaveID.random()
                _ = try await fixture.send([user], id: id)
                _ = try await fixture.service.unregisterToken(
                    PushV1.UnregisterTokenRequest(token: "f-ok-left"), context: PushFixture.playerContext(user))
                try await server.worker(fixture).runOnce()
                #expect(try await states(fixture, id)["f-ok-left"]?.state == .skipped)
                #expect(try server.requestCount(token: "f-ok-left") == 0)
            }
        }
    }
}

@Suite("Delivery without a provider")
struct UnconfiguredProviderTests {
    @Test func aDeliveryWithoutAProviderNamesItsPlatform() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.register(user, token: "fcm-only-device", platform: .fcm)
            let sent = try await fixture.send([user])
            let worker = DeliveryWorker(
                pool: fixture.pool, providers: [:], clock: fixture.clock, configuration: DeliveryWorker.Configuration(),
                logger: Logger(label: "push-test"))
            try await worker.runOnce()
            let delivery = try #require(try await fixture.deliveries(sent.notificationId).first)
            #expect(delivery.state == .failed)
            #expect(delivery.lastResult == "no provider is configured for platform PLATFORM_FCM (fcm)")
        }
    }
}
