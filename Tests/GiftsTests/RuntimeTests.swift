import Foundation
import RaveEvents
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTestSupport
import RaveTransport
import Testing

@testable import Gifts

@Suite("Gifts over mutual TLS")
struct RuntimeTests {
    @Test("gift types, a send, its event at the sink, accept, install links and provider links through the runtime")
    func giftsOverMutualTLS() async throws {
        let database = try await TestDatabase.create()
        let directory = try ServiceUnderTest.makeCertificates(for: "gifts", peers: ["identity", "gateway"])
        let peers = try PeerHarness(certificates: directory)
        let service = try await ServiceUnderTest.start(
            "gifts", certificates: directory, databaseURL: database.url,
            migrations: .directory(GiftsMain.migrationsDirectory),
            environment: [
                "RAVE_GIFTS_IDENTITY_ADDRESS": "127.0.0.1:\(peers.port)",
                "RAVE_GIFTS_SOCIAL_ADDRESS": "127.0.0.1:\(peers.port)",
                "RAVE_EVENT_SINKS": "push=127.0.0.1:\(peers.port)",
            ]
        ) { context in
            try await GiftsMain.services(context: context)
        }
        let connection = try service.client(as: "gateway")
        let app = RaveID.random().hex
        func options(user: String = "", scopes: String = "player") -> CallOptions {
            CallOptions(
                timeout: .seconds(10),
                metadata: [
                    MetadataKey.callerUserID: user, MetadataKey.callerAppID: app, MetadataKey.callerScopes: scopes,
                ])
        }
        do {
            let admin = GiftsV1.GiftsAdminClient(caller: connection)
            _ = try await admin.createGiftType(
                .init(appId: app, giftType: .init(key: "life", name: "Life", requestable: true)),
                options: options(scopes: "admin"))
            let types = try await admin.listGiftTypes(.init(appId: app), options: options(scopes: "admin"))
            #expect(types.giftTypes.map(\.key) == ["life"] && types.giftTypes[0].expirySeconds == 14 * 24 * 3600)

            let sender = peers.identity.addUser(named: "Alice")
            let recipient = peers.identity.addUser()
            let gifts = GiftsV1.GiftsClient(caller: connection)
            let sent = try await gifts.sendGifts(
                .init(giftTypeKey: "life", recipientIds: [recipient.hex], idempotencyKey: "k1"),
                options: options(user: sender.hex))
            #expect(sent.results.map(\.status) == [.sent])
            let listed = try await gifts.listGifts(.init(), options: options(user: recipient.hex))
            #expect(listed.gifts.map(\.giftId) == [sent.results[0].id])
            let accepted = try await gifts.acceptGift(
                .init(giftId: sent.results[0].id), options: options(user: recipient.hex))
            #expect(accepted.gift?.state == .accepted)

            // Install links and external gifts work without a caller.
            let link = try await gifts.createInstallLink(
                .init(giftTypeKey: "life", requestId: "req-1", channel: "sms"), options: options(user: sender.hex))
            let install = GiftsV1.GiftsInstallClient(caller: connection)
            let resolved = try await install.resolveInstallLink(
                .init(code: link.code), options: CallOptions(timeout: .seconds(10)))
            #expect(resolved.clicks == 1 && resolved.requestId == "req-1")
            _ = try await gifts.attachGiftToInvitations(
                .init(
                    giftTypeKey: "life",
                    invitations: [.init(provider: .google, externalUserId: "g-1", requestId: "req-1")]),
                options: options(user: sender.hex))
            let fetched = try await install.fetchExternalGift(
                .init(appId: app, requestId: "req-1"), options: CallOptions(timeout: .seconds(10)))
            #expect(fetched.giftTypeKey == "life")

            // Identity's publisher delivers a provider link to gifts' sink over mTLS (the identity certificate).
            let identityConnection = try service.client(as: "identity")
            let newcomer = peers.identity.addUser()
            let linked = IdentityV1.ProviderLinkedEvent(
                userId: newcomer.hex, appId: app, provider: .google, subject: "g-1", linkedAtUnixMs: 1)
            let delivered = try await EventsV1.EventSinkClient(caller: identityConnection).deliverEvents(
                .init(events: [
                    .init(
                        eventId: RaveID.random().hex, topic: EventTopic.providerLinked, key: newcomer.hex,
                        payload: linked.protobufBytes(), source: "identity")
                ]))
            identityConnection.close()
            #expect(delivered.handled == 1)
            let newcomerGifts = try await gifts.listGifts(.init(), options: options(user: newcomer.hex))
            #expect(newcomerGifts.gifts.map(\.senderId) == [sender.hex])

            // Every send (the attach's and the link's delivery) reaches the configured sink; wait for the publisher
            // (it runs in the background).
            var topics: [String] = []
            for _ in 0..<200 {
                topics = peers.sink.received.map(\.topic)
                if topics.filter({ $0 == EventTopic.giftsSent }).count >= 2 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(topics.filter { $0 == EventTopic.giftsSent }.count == 2)
            #expect(topics.contains(EventTopic.giftAccepted))
            #expect(peers.sink.received.allSatisfy { $0.source == "gifts" })
        } catch {
            Issue.record("call failed: \(error)")
        }
        connection.close()
        try await service.stop()
        await peers.shutdown()
        try await database.drop()
    }
}
