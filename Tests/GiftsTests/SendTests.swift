import RaveEvents
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Gifts

@Suite("Sending gifts")
struct SendTests {
    @Test("a send reports, per recipient, sent or why not, and publishes one event naming the gifts sent")
    func sendReportsPerRecipientResults() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser(named: "Alice")
            let friend = harness.identity.addUser()
            let blocker = harness.identity.addUser()
            let stranger = RaveID.random()
            harness.social.block(sender, by: blocker)
            let response = try await harness.send(from: sender, to: [friend, stranger, sender, friend, blocker])
            #expect(response.results.map(\.status) == [.sent, .unknownUser, .yourself, .duplicate, .blocked])
            #expect(response.results.map(\.userId) == [friend, stranger, sender, friend, blocker].map(\.hex))
            #expect(!response.results[0].id.isEmpty && response.results[1].id.isEmpty)
            let gift = try await harness.onlyPendingGift(of: friend)
            #expect(gift.giftId == response.results[0].id && gift.senderId == sender.hex && gift.state == .pending)
            #expect(gift.expiresAtUnixMs - gift.sentAtUnixMs == 14 * 24 * 3600 * 1000)
            let events = try await harness.sentEvents()
            #expect(events.map(\.key) == [sender.hex])
            let event = try #require(events.first).event
            #expect(event.senderDisplayName == "Alice" && event.giftTypeKey == "life" && event.senderId == sender.hex)
            #expect(event.gifts == [GiftsV1.SentGift(giftId: gift.giftId, recipientId: friend.hex)])
            #expect(event.expiresAtUnixMs - event.sentAtUnixMs == 14 * 24 * 3600 * 1000)
            #expect(try await harness.outbox(EventTopic.giftReceived).isEmpty)
        }
    }

    @Test("21 recipients is INVALID_ARGUMENT and sends nothing")
    func twentyOneRecipientsAreRefused() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            let recipients = (0..<21).map { _ in harness.identity.addUser() }
            await #expect {
                _ = try await harness.send(from: sender, to: recipients)
            } throws: { hasStatus($0, .invalidArgument) }
            #expect(try await harness.count("SELECT count(*) FROM gifts") == 0)
            let twenty = try await harness.send(from: sender, to: Array(recipients.prefix(20)))
            #expect(twenty.results.allSatisfy { $0.status == .sent })
            // One event for the send, its gifts in recipient order.
            let events = try await harness.sentEvents()
            #expect(events.count == 1)
            let gifts = try #require(events.first).event.gifts
            #expect(gifts.map(\.recipientId) == recipients.prefix(20).map(\.hex))
            #expect(gifts.map(\.giftId) == twenty.results.map(\.id))
        }
    }

    @Test("an unknown gift type is NOT_FOUND, a missing idempotency key INVALID_ARGUMENT")
    func unknownGiftTypeIsNotFound() async throws {
        try await GiftsHarness.with { harness in
            let sender = harness.identity.addUser()
            let recipient = harness.identity.addUser()
            await #expect {
                _ = try await harness.send("nothing", from: sender, to: [recipient])
            } throws: { hasStatus($0, .notFound) }
            try await harness.createType()
            await #expect {
                _ = try await harness.player.sendGifts(
                    .init(giftTypeKey: "life", recipientIds: [recipient.hex]), context: harness.context(sender))
            } throws: { hasStatus($0, .invalidArgument) }
        }
    }

    @Test("a replayed idempotency key returns the first result and sends nothing twice")
    func replayReturnsTheFirstResult() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            let recipients = [harness.identity.addUser(), harness.identity.addUser()]
            let first = try await harness.send(from: sender, to: recipients, idempotencyKey: "send-1")
            let replay = try await harness.send(from: sender, to: recipients, idempotencyKey: "send-1")
            #expect(!first.replayed && replay.replayed)
            #expect(replay.results == first.results)
            #expect(try await harness.count("SELECT count(*) FROM gifts") == 2)
            #expect(try await harness.sentEvents().map(\.event.gifts.count) == [2])
            // The key in metadata is the same key.
            let viaMetadata = try await harness.player.sendGifts(
                .init(giftTypeKey: "life", recipientIds: recipients.map(\.hex)),
                context: harness.context(sender, metadata: [MetadataKey.idempotencyKey: "send-1"]))
            #expect(viaMetadata.replayed)
            await #expect {
                _ = try await harness.send(from: sender, to: [recipients[0]], idempotencyKey: "send-1")
            } throws: { hasStatus($0, .failedPrecondition) }
        }
    }

    @Test("concurrent calls with one idempotency key send once and all answer the same")
    func concurrentReplaysSendOnce() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            let recipients = [harness.identity.addUser(), harness.identity.addUser()]
            let responses = try await withThrowingTaskGroup(of: GiftsV1.SendGiftsResponse.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await harness.send(from: sender, to: recipients, idempotencyKey: "same") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(responses.map(\.results)).count == 1)
            #expect(try await harness.count("SELECT count(*) FROM gifts") == 2)
        }
    }

    @Test("the daily limit holds for concurrent sends")
    func dailyLimitHoldsUnderConcurrency() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType(dailyLimit: 5)
            let sender = harness.identity.addUser()
            let recipients = (0..<12).map { _ in harness.identity.addUser() }
            let statuses = try await withThrowingTaskGroup(of: GiftsV1.RecipientStatus.self) { group in
                for recipient in recipients {
                    group.addTask { try await harness.send(from: sender, to: [recipient]).results[0].status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .sent }.count == 5)
            #expect(statuses.filter { $0 == .dailyLimit }.count == 7)
            #expect(try await harness.count("SELECT count(*) FROM gifts") == 5)
            let more = try await harness.send(from: sender, to: [harness.identity.addUser()])
            #expect(more.results.map(\.status) == [.dailyLimit])
        }
    }

    @Test("a merged-away recipient's gift goes to the account it was merged into")
    func mergedRecipientResolvesToTarget() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            let target = harness.identity.addUser()
            let source = RaveID.random()
            harness.identity.merge(source, into: target)
            let response = try await harness.send(from: sender, to: [source, target])
            #expect(response.results.map(\.status) == [.sent, .duplicate])
            #expect(try await harness.onlyPendingGift(of: target).recipientId == target.hex)
        }
    }
}
