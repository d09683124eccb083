import RaveEvents
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Gifts

@Suite("Gift requests")
struct RequestTests {
    @Test("a granted request sends the gift to the requester, once")
    func grantSendsTheGiftOnce() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let requester = harness.identity.addUser(named: "Bob")
            let friend = harness.identity.addUser(named: "Carol")
            let asked = try await harness.player.requestGifts(
                .init(giftTypeKey: "life", recipientIds: [friend.hex, requester.hex]),
                context: harness.context(requester))
            #expect(asked.results.map(\.status) == [.sent, .yourself])
            let events = try await harness.outbox(EventTopic.giftRequestsSent)
            let event = try GiftsV1.GiftRequestsSentEvent(protobufBytes: try #require(events.first).payload)
            #expect(events.count == 1 && events[0].key == requester.hex && event.requesterDisplayName == "Bob")
            #expect(
                event.requests == [GiftsV1.SentGiftRequest(requestId: asked.results[0].id, recipientId: friend.hex)])
            let listed = try await harness.player.listGiftRequests(.init(), context: harness.context(friend))
            #expect(listed.requests.map(\.requestId) == [asked.results[0].id])
            let requestID = asked.results[0].id
            let granted = try await harness.player.grantGiftRequest(
                .init(requestId: requestID), context: harness.context(friend))
            #expect(granted.request?.state == .granted && granted.gift?.recipientId == requester.hex)
            #expect(granted.gift?.requestId == requestID && granted.request?.giftId == granted.gift?.giftId)
            let gift = try await harness.onlyPendingGift(of: requester)
            #expect(gift.senderId == friend.hex)
            await #expect {
                _ = try await harness.player.grantGiftRequest(
                    .init(requestId: requestID), context: harness.context(friend))
            } throws: { hasStatus($0, .failedPrecondition) }
            await #expect {
                _ = try await harness.player.ignoreGiftRequest(
                    .init(requestId: requestID), context: harness.context(friend))
            } throws: { hasStatus($0, .failedPrecondition) }
            #expect(
                try await harness.player.listGiftRequests(.init(), context: harness.context(friend)).requests.isEmpty)
        }
    }

    @Test("a block made between the request and the grant refuses the grant, in either direction")
    func grantRechecksBlocks() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            for requesterBlocks in [true, false] {
                let requester = harness.identity.addUser()
                let friend = harness.identity.addUser()
                let requestID = try await harness.player.requestGifts(
                    .init(giftTypeKey: "life", recipientIds: [friend.hex]), context: harness.context(requester)
                ).results[0].id
                if requesterBlocks {
                    harness.social.block(friend, by: requester)
                } else {
                    harness.social.block(requester, by: friend)
                }
                await #expect {
                    _ = try await harness.player.grantGiftRequest(
                        .init(requestId: requestID), context: harness.context(friend))
                } throws: { error in
                    hasStatus(error, .failedPrecondition) && "\(error)".contains("blocked")
                }
                let request = try await harness.player.getGiftRequestById(
                    .init(requestId: requestID), context: harness.context(friend))
                #expect(request.request?.state == .pending)
            }
            #expect(try await harness.count("SELECT count(*) FROM gifts") == 0)
            #expect(try await harness.sentEvents().isEmpty)
        }
    }

    @Test("a type that is not requestable is FAILED_PRECONDITION")
    func notRequestableTypeIsRefused() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType("gold", requestable: false)
            let requester = harness.identity.addUser()
            await #expect {
                _ = try await harness.player.requestGifts(
                    .init(giftTypeKey: "gold", recipientIds: [harness.identity.addUser().hex]),
                    context: harness.context(requester))
            } throws: { hasStatus($0, .failedPrecondition) }
            #expect(try await harness.count("SELECT count(*) FROM gift_requests") == 0)
        }
    }

    @Test("only the asked player answers; an unknown request id is NOT_FOUND")
    func onlyTheAskedPlayerAnswers() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let requester = harness.identity.addUser()
            let friend = harness.identity.addUser()
            let requestID = try await harness.player.requestGifts(
                .init(giftTypeKey: "life", recipientIds: [friend.hex]), context: harness.context(requester)
            ).results[0].id
            await #expect {
                _ = try await harness.player.grantGiftRequest(
                    .init(requestId: requestID), context: harness.context(requester))
            } throws: { hasStatus($0, .permissionDenied) }
            await #expect {
                _ = try await harness.player.grantGiftRequest(
                    .init(requestId: RaveID.random().hex), context: harness.context(friend))
            } throws: { hasStatus($0, .notFound) }
            await #expect {
                _ = try await harness.player.ignoreGiftRequest(
                    .init(requestId: RaveID.random().hex), context: harness.context(friend))
            } throws: { hasStatus($0, .notFound) }
            let ignored = try await harness.player.ignoreGiftRequest(
                .init(requestId: requestID), context: harness.context(friend))
            #expect(ignored.request?.state == .ignored)
            #expect(try await harness.count("SELECT count(*) FROM gifts") == 0)
        }
    }
}
