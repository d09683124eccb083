import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Wallet

/// Many bets on one account at once: each answers with its result (never ABORTED, INTERNAL or UNAVAILABLE), and
/// the ledger moves every settled bet's money exactly once.
@Suite struct WalletContentionTests {
    static let crowd = 200

    @Test func concurrentBetsOnOneAccountAllSettleAndTheLedgerAddsUp() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("200.00", to: user)
            let context = WalletFixture.playerContext(user)
            let results = await ConcurrentCalls.run(Self.crowd) { _ in
                try await fixture.service.placeBet(
                    WalletV1.PlaceBetRequest(bet: WalletFixture.bet("1.00")), context: context)
            }
            #expect(ConcurrentCalls.failures(results) == [:], "bets")
            let settled = results.compactMap { try? $0.get().result }.filter { $0.status == .settled }
            #expect(settled.count == Self.crowd)
            let usd = Currency(code: "USD", decimals: 2)
            let payouts = try settled.reduce(Int64(0)) { $0 + (try MoneyFormat.parse($1.payout, currency: usd)) }
            #expect(try await fixture.balance(of: user) == 20_000 - 100 * Int64(Self.crowd) + payouts)
            let wagers = try await fixture.pool.query(
                "SELECT count(*) FROM transfers WHERE user_id = $1 AND bet_id IS NOT NULL AND from_account = "
                    + "(SELECT account_id FROM accounts WHERE user_id = $1 AND kind = 'user')", [user])
            #expect(try wagers[0].decode(Int64.self, at: 0) == Int64(Self.crowd))
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func oneBetIdPlacedByManyCallsAtOnceSettlesOnceAndEveryCallGetsItsResult() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("10.00", to: user)
            let context = WalletFixture.playerContext(user)
            let bet = WalletFixture.bet("1.00")
            let results = await ConcurrentCalls.run(Self.crowd) { _ in
                try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context)
            }
            #expect(ConcurrentCalls.failures(results) == [:], "replays")
            let answers = results.compactMap { try? $0.get() }
            #expect(answers.count == Self.crowd && answers.allSatisfy { $0 == answers[0] })
            #expect(answers.first?.result?.status == .settled)
            let wagers = try await fixture.pool.query(
                "SELECT count(*) FROM transfers WHERE bet_id = $1 AND from_account = "
                    + "(SELECT account_id FROM accounts WHERE user_id = $2 AND kind = 'user')",
                [RaveID(bet.betId), user])
            #expect(try wagers[0].decode(Int64.self, at: 0) == 1)
            try await fixture.expectLedgerInvariants()
        }
    }
}
