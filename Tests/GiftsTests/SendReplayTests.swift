import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Gifts

@Suite("Replays and the gift type cache")
struct SendReplayTests {
    @Test("a replayed send of a limited type counts nothing again and sends nothing")
    func limitedReplayCountsOnce() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType(dailyLimit: 3)
            let sender = harness.identity.addUser()
            let recipients = [harness.identity.addUser(), harness.identity.addUser()]
            let first = try await harness.send(from: sender, to: recipients, idempotencyKey: "limited")
            let replay = try await harness.send(from: sender, to: recipients, idempotencyKey: "limited")
            #expect(replay.replayed && replay.results == first.results)
            #expect(try await harness.count("SELECT count(*) FROM gifts") == 2)
            #expect(try await harness.count("SELECT sum(sent)::int8 FROM daily_sends") == 2)
            // Of the limit of 3, one send is left.
            let more = try await harness.send(
                from: sender, to: [harness.identity.addUser(), harness.identity.addUser()])
            #expect(more.results.map(\.status) == [.sent, .dailyLimit])
        }
    }

    @Test("an operator's change of a type applies to the next send of this process")
    func typeEditsReachSends() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            _ = try await harness.send(from: sender, to: [harness.identity.addUser()])
            _ = try await harness.admin.updateGiftType(
                .init(appId: harness.app.hex, giftType: .init(key: "life", name: "Life", dailyLimitPerSender: 2)),
                context: harness.adminContext)
            let limited = try await harness.send(
                from: sender, to: (0..<3).map { _ in harness.identity.addUser() })
            #expect(limited.results.map(\.status) == [.sent, .sent, .dailyLimit])
        }
    }

    @Test("the cache answers only within its time to live and forgets everything when full")
    func cacheLifetime() {
        let type = GiftTypeRecord(
            id: 1, appID: RaveID.random(), key: "life", name: "Life", imageURL: "", requestable: false,
            expirySeconds: 60, dailyLimitPerSender: 0)
        let fresh = GiftTypeCache()
        #expect(fresh.type("life", appID: type.appID) == nil)
        fresh.remember(type)
        #expect(fresh.type("life", appID: type.appID) == type)
        #expect(fresh.type("life", appID: RaveID.random()) == nil)
        let stale = GiftTypeCache(timeToLive: .zero)
        stale.remember(type)
        #expect(stale.type("life", appID: type.appID) == nil)
        let small = GiftTypeCache(capacity: 1)
        var other = type
        other.key = "coin"
        small.remember(type)
        small.remember(other)
        #expect(small.type("life", appID: type.appID) == nil && small.type("coin", appID: type.appID) == other)
    }
}
