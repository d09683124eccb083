import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Gifts

@Suite("Account merge")
struct MergeTests {
    @Test("the target keeps both players' gifts and requests; a repeated merge id changes nothing")
    func mergeUnitesGifts() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let source = harness.identity.addUser()
            let target = harness.identity.addUser()
            let friend = harness.identity.addUser()
            let toSource = try await harness.send(from: friend, to: [source]).results[0].id
            let toTarget = try await harness.send(from: friend, to: [target]).results[0].id
            let fromSource = try await harness.send(from: source, to: [friend]).results[0].id
            let request = try await harness.player.requestGifts(
                .init(giftTypeKey: "life", recipientIds: [source.hex]), context: harness.context(friend)
            ).results[0].id
            let merge = MergeV1.MergeUsersRequest(mergeId: "m-1", sourceUserId: source.hex, targetUserId: target.hex)
            let applied = try await harness.merge.mergeUsers(merge, context: harness.serviceContext)
            let repeated = try await harness.merge.mergeUsers(merge, context: harness.serviceContext)
            #expect(!applied.alreadyApplied && repeated.alreadyApplied)
            let pending = try await harness.player.listGifts(.init(), context: harness.context(target))
            #expect(Set(pending.gifts.map(\.giftId)) == [toSource, toTarget])
            let sent = try await harness.player.getGift(.init(giftId: fromSource), context: harness.context(target))
            #expect(sent.gift?.senderId == target.hex)
            let requests = try await harness.player.listGiftRequests(.init(), context: harness.context(target))
            #expect(requests.requests.map(\.requestId) == [request])
            // The source's id is the target now: a list under it is the target's.
            let underSource = try await harness.player.listGifts(.init(), context: harness.context(source))
            #expect(Set(underSource.gifts.map(\.giftId)) == [toSource, toTarget])
            #expect(try await harness.count("SELECT count(*) FROM gifts WHERE recipient_id = $1", [source]) == 0)
            // The target can answer what was the source's.
            _ = try await harness.player.acceptGift(.init(giftId: toSource), context: harness.context(target))
        }
    }
}
