import RaveMessages
import RavePostgres
import Testing

@testable import Push

/// Gifts publishes one event per send ("gifts.gifts_sent") and per request call ("gifts.requests_sent"); push fans
/// each out into one notification per recipient, worded as the per-recipient topics.
@Suite("Fanned-out gift events")
struct FannedOutEventTests {
    @Test func aSendEventBecomesOneNotificationPerRecipientExactlyOnce() async throws {
        try await PushFixture.with { fixture in
            let recipients = [RaveID.random(), RaveID.random(), RaveID.random()]
            for (index, recipient) in recipients.enumerated() {
                try await fixture.register(recipient, token: "phone-\(index)")
            }
            let giftIDs = recipients.map { _ in RaveID.random().hex }
            let sender = RaveID.random().hex
            let event = EventNotificationTests.event(
                "gifts.gifts_sent",
                GiftsV1.GiftsSentEvent(
                    appId: PushFixture.appID, senderId: sender, senderDisplayName: "Alice", giftTypeKey: "egg",
                    giftTypeName: "Golden Egg",
                    gifts: zip(giftIDs, recipients).map { GiftsV1.SentGift(giftId: $0, recipientId: $1.hex) }
                ).protobufBytes())
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: EventNotificationTests.quiet)
            let first = try await sink.deliverEvents(.init(events: [event]), context: PushFixture.serviceContext())
            let again = try await sink.deliverEvents(.init(events: [event]), context: PushFixture.serviceContext())
            #expect(first.handled == 1 && again.handled == 0)

            for (giftID, recipient) in zip(giftIDs, recipients) {
                #expect(try await fixture.deliveries(giftID).map(\.state) == [.pending])
                let inbox = try await fixture.service.listInbox(.init(), context: PushFixture.playerContext(recipient))
                #expect(inbox.entries.map(\.notificationId) == [giftID])
                let entry = try #require(inbox.entries.first)
                #expect(entry.title == "You received a gift" && entry.body == "Alice sent you Golden Egg.")
                #expect(
                    entry.data == [
                        PushV1.DataEntry(key: "rave_event", value: "gifts.gift_received"),
                        PushV1.DataEntry(key: "gift_id", value: giftID),
                        PushV1.DataEntry(key: "sender_id", value: sender),
                    ])
            }
            #expect(try await Self.count("notifications", fixture) == 3)
            #expect(try await Self.count("deliveries", fixture) == 3)
        }
    }

    @Test func aRequestsEventFansOutAndAMalformedRecipientSkipsOnlyItself() async throws {
        try await PushFixture.with { fixture in
            let asked = RaveID.random()
            try await fixture.register(asked, token: "phone")
            let requestID = RaveID.random().hex
            let event = EventNotificationTests.event(
                "gifts.requests_sent",
                GiftsV1.GiftRequestsSentEvent(
                    appId: PushFixture.appID, requesterId: RaveID.random().hex, requesterDisplayName: "Bob",
                    giftTypeKey: "egg",
                    requests: [
                        GiftsV1.SentGiftRequest(requestId: RaveID.random().hex, recipientId: "nobody"),
                        GiftsV1.SentGiftRequest(requestId: requestID, recipientId: asked.hex),
                    ]
                ).protobufBytes())
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: EventNotificationTests.quiet)
            let response = try await sink.deliverEvents(.init(events: [event]), context: PushFixture.serviceContext())
            #expect(response.handled == 1)
            let inbox = try await fixture.service.listInbox(.init(), context: PushFixture.playerContext(asked))
            #expect(inbox.entries.map(\.notificationId) == [requestID])
            #expect(inbox.entries.first?.body == "Bob asks you for egg.")
            #expect(try await Self.count("notifications", fixture) == 1)
        }
    }

    @Test func theAppsReceivedGiftTemplateWordsAFannedOutSend() async throws {
        try await PushFixture.with { fixture in
            let recipient = RaveID.random()
            try await fixture.register(recipient, token: "phone")
            _ = try await fixture.admin.setTemplate(
                .init(
                    appId: PushFixture.appID,
                    template: .init(
                        topic: "gifts.gift_received", language: "en", title: "Gift!", body: "From {sender_name}")),
                context: PushFixture.adminContext())
            _ = try await fixture.admin.setDefaultLanguage(
                .init(appId: PushFixture.appID, language: "en"), context: PushFixture.adminContext())
            let giftID = RaveID.random().hex
            let event = EventNotificationTests.event(
                "gifts.gifts_sent",
                GiftsV1.GiftsSentEvent(
                    appId: PushFixture.appID, senderId: RaveID.random().hex, senderDisplayName: "Alice",
                    giftTypeKey: "egg", gifts: [GiftsV1.SentGift(giftId: giftID, recipientId: recipient.hex)]
                ).protobufBytes())
            let sink = PushEventSink(dependencies: fixture.dependencies, logger: EventNotificationTests.quiet)
            _ = try await sink.deliverEvents(.init(events: [event]), context: PushFixture.serviceContext())
            let inbox = try await fixture.service.listInbox(.init(), context: PushFixture.playerContext(recipient))
            #expect(inbox.entries.map(\.title) == ["Gift!"] && inbox.entries.map(\.body) == ["From Alice"])
        }
    }

    static func count(_ table: String, _ fixture: PushFixture) async throws -> Int64 {
        try await fixture.pool.query(PostgresQuery("SELECT count(*) FROM \(table)"))[0].decode(Int64.self, at: 0)
    }
}
