import RaveEvents
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Gifts

@Suite("Listing, accepting and rejecting gifts")
struct AnswerTests {
    @Test("accepting publishes gifts.gift_accepted; accepting twice is FAILED_PRECONDITION")
    func acceptOnce() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            let recipient = harness.identity.addUser()
            let giftID = try await harness.send(from: sender, to: [recipient]).results[0].id
            let accepted = try await harness.player.acceptGift(
                .init(giftId: giftID), context: harness.context(recipient))
            #expect(accepted.gift?.state == .accepted && (accepted.gift?.respondedAtUnixMs ?? 0) > 0)
            let events = try await harness.outbox(EventTopic.giftAccepted)
            #expect(events.map(\.key) == [recipient.hex])
            let event = try GiftsV1.GiftAcceptedEvent(protobufBytes: try #require(events.first).payload)
            #expect(event.giftId == giftID && event.senderId == sender.hex && event.giftTypeKey == "life")
            // Part of the payload is encoded by the accept's SQL: every field must still decode as sent.
            #expect(event.appId == harness.app.hex && event.recipientId == recipient.hex)
            #expect(event.acceptedAtUnixMs == accepted.gift?.respondedAtUnixMs)
            await #expect {
                _ = try await harness.player.acceptGift(.init(giftId: giftID), context: harness.context(recipient))
            } throws: { hasStatus($0, .failedPrecondition) }
            await #expect {
                _ = try await harness.player.rejectGift(.init(giftId: giftID), context: harness.context(recipient))
            } throws: { hasStatus($0, .failedPrecondition) }
            #expect(try await harness.outbox(EventTopic.giftAccepted).count == 1)
        }
    }

    @Test("only the recipient may accept: someone else's gift is PERMISSION_DENIED, an unknown one NOT_FOUND")
    func acceptingSomeoneElsesGiftIsDenied() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            let recipient = harness.identity.addUser()
            let giftID = try await harness.send(from: sender, to: [recipient]).results[0].id
            await #expect {
                _ = try await harness.player.acceptGift(.init(giftId: giftID), context: harness.context(sender))
            } throws: { hasStatus($0, .permissionDenied) }
            await #expect {
                _ = try await harness.player.acceptGift(
                    .init(giftId: RaveID.random().hex), context: harness.context(recipient))
            } throws: { hasStatus($0, .notFound) }
            await #expect {
                _ = try await harness.player.acceptGift(.init(giftId: "not-an-id"), context: harness.context(recipient))
            } throws: { hasStatus($0, .invalidArgument) }
            let rejected = try await harness.player.rejectGift(
                .init(giftId: giftID), context: harness.context(recipient))
            #expect(rejected.gift?.state == .rejected)
            #expect(try await harness.outbox(EventTopic.giftAccepted).isEmpty)
        }
    }

    @Test("an expired gift cannot be accepted and leaves the pending list")
    func expiredGiftCannotBeAccepted() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            let recipient = harness.identity.addUser()
            let giftID = try await harness.send(from: sender, to: [recipient]).results[0].id
            // Age the gift instead of waiting for it.
            try await harness.pool.query(
                """
                UPDATE gifts SET sent_at = now() - interval '15 days', expires_at = now() - interval '1 day'
                WHERE id = $1
                """, [RaveID(giftID)])
            await #expect {
                _ = try await harness.player.acceptGift(.init(giftId: giftID), context: harness.context(recipient))
            } throws: { hasStatus($0, .failedPrecondition) }
            let gift = try await harness.player.getGift(.init(giftId: giftID), context: harness.context(recipient))
            #expect(gift.gift?.state == .expired)
            #expect(try await harness.player.listGifts(.init(), context: harness.context(recipient)).gifts.isEmpty)
        }
    }

    @Test("the pending list is newest first and pages with tokens")
    func listPagesNewestFirst() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let recipient = harness.identity.addUser()
            var sent: [String] = []
            for _ in 0..<5 {
                sent.append(try await harness.send(from: harness.identity.addUser(), to: [recipient]).results[0].id)
            }
            let first = try await harness.player.listGifts(.init(pageSize: 2), context: harness.context(recipient))
            #expect(first.gifts.map(\.giftId) == [sent[4], sent[3]])
            let second = try await harness.player.listGifts(
                .init(pageSize: 2, pageToken: first.nextPageToken), context: harness.context(recipient))
            #expect(second.gifts.map(\.giftId) == [sent[2], sent[1]])
            _ = try await harness.player.acceptGift(.init(giftId: sent[0]), context: harness.context(recipient))
            let third = try await harness.player.listGifts(
                .init(pageSize: 2, pageToken: second.nextPageToken), context: harness.context(recipient))
            #expect(third.gifts.isEmpty && third.nextPageToken.isEmpty)
            await #expect {
                _ = try await harness.player.listGifts(.init(pageToken: "garbage"), context: harness.context(recipient))
            } throws: { hasStatus($0, .invalidArgument) }
            await #expect {
                _ = try await harness.player.listGifts(.init(pageSize: 101), context: harness.context(recipient))
            } throws: { hasStatus($0, .invalidArgument) }
        }
    }
}
