import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Gifts

/// A game keeps a merged-away player's token: what it sends, accepts and lists is the target's.
@Suite("Gifts: calls naming a merged-away player")
struct GiftsMergedIDTests {
    @Test("a gift sent under the old id after the merge names the target as sender; lists and answers are the target's")
    func callsUnderTheOldIDAreTheTargets() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let (bob, guest, carol) = (
                harness.identity.addUser(), harness.identity.addUser(), harness.identity.addUser()
            )
            let early = try await harness.send(from: carol, to: [guest]).results[0].id
            try await harness.mergeGifts(guest, into: bob)

            let sent = try await harness.send(from: guest, to: [carol])
            #expect(sent.results.map(\.status) == [.sent])
            let gift = try await harness.player.getGift(
                .init(giftId: sent.results[0].id), context: harness.context(carol))
            #expect(gift.gift?.senderId == bob.hex, "the sender is the account the old id is now")
            #expect(try await harness.sentEvents().last?.event.senderId == bob.hex)
            // Sending to oneself under the other id is refused as sending to oneself.
            let own = try await harness.send(from: guest, to: [bob])
            #expect(own.results.map(\.status) == [.yourself])

            let listed = try await harness.player.listGifts(.init(), context: harness.context(guest))
            #expect(listed.gifts.map(\.giftId) == [early], "a list under the old id shows the target's gifts")
            let accepted = try await harness.player.acceptGift(.init(giftId: early), context: harness.context(guest))
            #expect(accepted.gift?.recipientId == bob.hex)
            #expect(
                try await harness.count("SELECT count(*) FROM gifts WHERE sender_id = $1 OR recipient_id = $1", [guest])
                    == 0)
        }
    }

    @Test("a send retried under the old id after the merge returns its first result and sends nothing more")
    func retriesUnderTheOldIDAreExactlyOnce() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let (bob, guest, carol) = (
                harness.identity.addUser(), harness.identity.addUser(), harness.identity.addUser()
            )
            let first = try await harness.send(from: guest, to: [carol], idempotencyKey: "send-1")
            try await harness.mergeGifts(guest, into: bob)
            let retried = try await harness.send(from: guest, to: [carol], idempotencyKey: "send-1")
            #expect(retried.replayed && retried.results == first.results)
            #expect(try await harness.count("SELECT count(*) FROM gifts WHERE sender_id = $1", [bob]) == 1)
        }
    }

    @Test("sends under both ids racing the merge all end on the target, each once")
    func sendsRacingTheMergeEndOnTheTarget() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let (bob, guest) = (harness.identity.addUser(), harness.identity.addUser())
            let friends = (0..<4).map { _ in harness.identity.addUser() }
            let merges = harness.dependencies.mergedUsers
            let keys = (0..<40).map { "race-\($0)" }
            async let merged: Void = harness.mergeGifts(guest, into: bob)
            let results = await ConcurrentCalls.run(keys.count) { index in
                try await merges.tracking {
                    try await harness.send(
                        from: index.isMultiple(of: 2) ? guest : bob, to: [friends[index % friends.count]],
                        idempotencyKey: keys[index])
                }
            }
            try await merged
            #expect(ConcurrentCalls.failures(results).isEmpty)
            #expect(try await harness.count("SELECT count(*) FROM gifts WHERE sender_id = $1", [bob]) == keys.count)
            #expect(try await harness.count("SELECT count(*) FROM gifts WHERE sender_id = $1", [guest]) == 0)
            #expect(try await harness.count("SELECT count(*) FROM idempotent_calls WHERE sender_id = $1", [guest]) == 0)
            var received = 0
            for friend in friends {
                received += try await harness.player.listGifts(.init(), context: harness.context(friend)).gifts.count
            }
            #expect(received == keys.count)
        }
    }
}

extension GiftsHarness {
    /// Merges as identity's saga does: identity first (so it resolves the source), then this participant.
    func mergeGifts(_ source: RaveID, into target: RaveID) async throws {
        identity.merge(source, into: target)
        _ = try await merge.mergeUsers(
            MergeV1.MergeUsersRequest(
                mergeId: "m-\(RaveID.random().hex)", sourceUserId: source.hex, targetUserId: target.hex),
            context: serviceContext)
    }
}
