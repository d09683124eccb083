import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Wallet

/// A game keeps a merged-away player's token: its bets, deposits and queries are the target's.
@Suite("Wallet: calls naming a merged-away player")
struct WalletMergedIDTests {
    @Test("bets and deposits under the old id after the merge move the target's money; replays stay exactly once")
    func callsUnderTheOldIDUseTheTargetsWallet() async throws {
        try await WalletFixture.with { fixture in
            let (bob, guest) = (RaveID.random(), RaveID.random())
            try await fixture.deposit("4.00", to: guest)
            try await fixture.deposit("1.00", to: bob)
            let early = WalletFixture.bet("0.50")
            let earlyResult = try await fixture.placeBet(early, by: guest)
            try await fixture.merge(guest, into: bob)
            #expect(try await fixture.balance(of: guest) == 0)
            let afterMerge = try await fixture.balance(of: bob)
            #expect(afterMerge == 500 - 50 + Self.cents(earlyResult.payout))

            let late = try await fixture.placeBet(WalletFixture.bet("1.00"), by: guest)
            #expect(late.status == .settled)
            let deposited = try await fixture.deposit("2.00", to: guest)
            let expected = afterMerge - 100 + Self.cents(late.payout) + 200
            #expect(deposited.balance == Self.format(expected), "a deposit naming the old id credits the target")
            #expect(try await fixture.balance(of: bob) == expected)
            #expect(try await fixture.balance(of: guest) == 0)
            let seenByGuest = try await fixture.service.getWallet(
                WalletV1.GetWalletRequest(), context: WalletFixture.playerContext(guest))
            #expect(seenByGuest.balances.map(\.amount) == [Self.format(expected)])

            // The bet placed before the merge, replayed under either id, is answered from what was stored.
            for player in [guest, bob] {
                let replay = try await fixture.placeBet(early, by: player)
                #expect(replay.payout == earlyResult.payout && replay.nonce == earlyResult.nonce)
            }
            #expect(try await fixture.balance(of: bob) == expected, "replays move nothing")
            #expect(try await fixture.betRows(early.betId) == [bob])
            let verified = try await fixture.service.verifyBet(
                WalletV1.VerifyBetRequest(betId: early.betId), context: WalletFixture.playerContext(guest))
            #expect(verified.revealed && verified.matches, "the old account's seed is revealed by the merge")
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test("bets under both ids racing the merge all settle once, on the target, and the balance adds up")
    func betsRacingTheMergeSettleOnceOnTheTarget() async throws {
        try await WalletFixture.with { fixture in
            let (bob, guest) = (RaveID.random(), RaveID.random())
            try await fixture.deposit("10.00", to: guest)
            try await fixture.deposit("10.00", to: bob)
            let bets = (0..<60).map { _ in WalletFixture.bet("0.10") }
            let merges = fixture.dependencies.merges
            async let merged: Void = fixture.merge(guest, into: bob)
            let results = await ConcurrentCalls.run(bets.count) { index in
                try await merges.tracking {
                    try await fixture.placeBet(bets[index], by: index.isMultiple(of: 2) ? guest : bob)
                }
            }
            try await merged
            #expect(ConcurrentCalls.failures(results).isEmpty)
            let settled = results.compactMap { try? $0.get() }
            #expect(settled.allSatisfy { $0.status == .settled })
            let payouts = settled.reduce(Int64(0)) { $0 + Self.cents($1.payout) }
            #expect(try await fixture.balance(of: guest) == 0)
            #expect(try await fixture.balance(of: bob) == 2000 - 10 * Int64(bets.count) + payouts)
            for bet in bets { #expect(try await fixture.betRows(bet.betId) == [bob]) }
            let wagers = try await fixture.pool.query(
                "SELECT count(DISTINCT bet_id), count(*) FROM transfers WHERE code = 'bet_wager'")
            #expect(try wagers[0].decode(Int64.self, at: 0) == Int64(bets.count))
            #expect(try wagers[0].decode(Int64.self, at: 1) == Int64(bets.count))
            try await fixture.expectLedgerInvariants()
        }
    }

    static func cents(_ amount: String) -> Int64 {
        let parts = amount.split(separator: ".")
        return (Int64(parts[0]) ?? 0) * 100 + (parts.count > 1 ? Int64(parts[1]) ?? 0 : 0)
    }

    static func format(_ cents: Int64) -> String {
        "\(cents / 100)." + (cents % 100 < 10 ? "0" : "") + "\(cents % 100)"
    }
}

extension WalletFixture {
    /// Merges as identity's saga does.
    func merge(_ source: RaveID, into target: RaveID) async throws {
        _ = try await merge.mergeUsers(
            MergeV1.MergeUsersRequest(
                mergeId: "m-\(RaveID.random().hex)", sourceUserId: source.hex, targetUserId: target.hex),
            context: WalletFixture.serviceContext())
    }

    /// Places one bet as `player`'s token would, failing on a failed bet.
    func placeBet(_ bet: WalletV1.Bet, by player: RaveID) async throws -> WalletV1.BetResult {
        try #require(
            try await service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: Self.playerContext(player)).result)
    }

    /// The players holding a bet id.
    func betRows(_ betID: String) async throws -> [RaveID] {
        try await pool.query("SELECT user_id FROM bets WHERE bet_id = $1", [RaveID(betID)]).map {
            try $0.decode(RaveID.self, at: 0)
        }
    }
}
