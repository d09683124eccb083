import RaveEvents
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Gifts

/// Many calls on one gift or one recipient at once: each answers what it did (never ABORTED, INTERNAL or
/// UNAVAILABLE) and the final state counts every call once.
@Suite("Contention on one gift and one recipient")
struct GiftsContentionTests {
    static let crowd = 200

    @Test("200 concurrent accepts of one gift: one acceptance, every other call FAILED_PRECONDITION")
    func concurrentAcceptsOfOneGift() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let sender = harness.identity.addUser()
            let recipient = harness.identity.addUser()
            let giftID = try await harness.send(from: sender, to: [recipient]).results[0].id
            let results = await ConcurrentCalls.run(Self.crowd) { _ in
                try await harness.player.acceptGift(.init(giftId: giftID), context: harness.context(recipient))
            }
            let accepted = results.filter { (try? $0.get())?.gift?.state == .accepted }
            #expect(accepted.count == 1)
            #expect(
                ConcurrentCalls.failures(results) == [
                    "failedPrecondition the gift was already accepted": Self.crowd - 1
                ])
            #expect(try await harness.outbox(EventTopic.giftAccepted).count == 1)
        }
    }

    @Test("200 senders sending to one recipient at once: every gift arrives once")
    func concurrentSendsToOneRecipient() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType()
            let recipient = harness.identity.addUser()
            let senders = (0..<Self.crowd).map { _ in harness.identity.addUser() }
            let results = await ConcurrentCalls.run(Self.crowd) { index in
                try await harness.send(from: senders[index], to: [recipient])
            }
            #expect(ConcurrentCalls.failures(results) == [:], "sends")
            #expect(results.allSatisfy { (try? $0.get())?.results.map(\.status) == [.sent] })
            #expect(
                try await harness.count(
                    "SELECT count(*) FROM gifts WHERE recipient_id = $1 AND state = 0", [recipient]) == Self.crowd)
            #expect(try await harness.sentEvents().count == Self.crowd)
        }
    }

    @Test("one sender's 200 concurrent sends under a daily limit of 50: exactly 50 sent, the rest DAILY_LIMIT")
    func concurrentSendsOfOneSenderKeepTheDailyLimit() async throws {
        try await GiftsHarness.with { harness in
            try await harness.createType(dailyLimit: 50)
            let sender = harness.identity.addUser()
            let recipient = harness.identity.addUser()
            let results = await ConcurrentCalls.run(Self.crowd) { _ in
                try await harness.send(from: sender, to: [recipient])
            }
            #expect(ConcurrentCalls.failures(results) == [:], "sends")
            let statuses = results.compactMap { try? $0.get().results.first?.status }
            #expect(statuses.filter { $0 == .sent }.count == 50)
            #expect(statuses.filter { $0 == .dailyLimit }.count == Self.crowd - 50)
            #expect(try await harness.count("SELECT count(*) FROM gifts WHERE recipient_id = $1", [recipient]) == 50)
        }
    }
}
