import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Wallet

@Suite struct BetTests {
    @Test func backedBetDebitsTheWagerAndCreditsThePayoutAtomically() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            let deposit = try await fixture.deposit("10.00", to: user)
            #expect(deposit.balance == "10.00")
            let response = try await fixture.service.placeBet(
                WalletV1.PlaceBetRequest(bet: WalletFixture.bet("1.00", game: "slot")),
                context: WalletFixture.playerContext(user))
            let result = try #require(response.result)
            #expect(result.status == .settled)
            #expect(result.outcome?.stops.count == 3)
            #expect(result.outcome?.window.count == 3)
            #expect(result.outcome?.paylines.count == 5)
            let payout = try MoneyFormat.parse(result.payout, currency: Currency(code: "USD", decimals: 2))
            #expect(try await fixture.balance(of: user) == 1_000 - 100 + payout)
            #expect(result.balance == MoneyFormat.format(1_000 - 100 + payout, decimals: 2))
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func replayedBetIdReturnsTheStoredResultAndMovesNoMoneyTwice() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            let bet = WalletFixture.bet("1.00")
            let context = WalletFixture.playerContext(user)
            let first = try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context)
            let balance = try await fixture.balance(of: user)
            let again = try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context)
            #expect(first == again)
            #expect(try await fixture.balance(of: user) == balance)
            var different = bet
            different.wager = "2.00"
            await expectStatus(.alreadyExists, "bet id \(bet.betId) was already used for a different bet") {
                try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: different), context: context)
            }
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func failedBetIsRememberedSoARetryNeverSucceedsLater() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("0.50", to: user)
            let bet = WalletFixture.bet("1.00")
            let context = WalletFixture.playerContext(user)
            await expectStatus(.failedPrecondition, "insufficient funds in USD") {
                try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context)
            }
            try await fixture.deposit("5.00", to: user)
            await expectStatus(.failedPrecondition, "insufficient funds in USD") {
                try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context)
            }
            #expect(try await fixture.balance(of: user) == 550)
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func unbackedBetMovesNoMoneyButKeepsAnAuditRow() async throws {
        try await WalletFixture.with { fixture in
            let guest = RaveID.random()
            var bet = WalletFixture.bet("3.00", game: "slot")
            bet.unbacked = true
            let context = WalletFixture.playerContext(guest, scopes: [PreparedBet.unbackedOnlyScope])
            let result = try #require(
                try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context).result)
            #expect(result.status == .settled && result.balance.isEmpty)
            let rows = try await fixture.pool.query("SELECT kind FROM bets WHERE user_id = $1", [guest])
            #expect(try rows.map { try $0.decode(String.self, at: 0) } == ["unbacked"])
            #expect(try await fixture.pool.query("SELECT 1 FROM transfers").isEmpty)
            bet.unbacked = false
            bet.betId = RaveID.random().hex
            await expectStatus(.permissionDenied, "this token allows unbacked bets only") {
                try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context)
            }
        }
    }

    @Test func creditBetSpendsCreditsOfAnotherGame() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            let context = WalletFixture.playerContext(user)
            var bet = WalletFixture.bet("1.00", game: "dice")
            bet.creditGameId = "slot"
            await expectStatus(.failedPrecondition, "not enough credits of game slot for this bet") {
                try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context)
            }
            try await fixture.deposit("2.00", to: user, game: "slot")
            bet.betId = RaveID.random().hex
            let result = try #require(
                try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context).result)
            #expect(result.status == .settled)
            #expect(try await fixture.balance(of: user) == 0)
            let wallet = try await fixture.service.getWallet(WalletV1.GetWalletRequest(), context: context)
            #expect(wallet.balances.contains { $0.gameId == "slot" && $0.amount == result.balance })
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func badInputGetsAClearStatus() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            let context = WalletFixture.playerContext(user)
            func place(_ change: (inout WalletV1.Bet) -> Void) async throws {
                var bet = WalletFixture.bet("1.00")
                change(&bet)
                _ = try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context)
            }
            await expectStatus(.notFound, "unknown game \"nope\"") { try await place { $0.gameId = "nope" } }
            await expectStatus(.notFound, "unknown currency \"EUR\"") { try await place { $0.currency = "EUR" } }
            await expectStatus(.invalidArgument, "wager must be greater than 0, got \"0\"") {
                try await place { $0.wager = "0" }
            }
            await expectStatus(nil) { try await place { $0.wager = "-1.00" } }
            await expectStatus(.invalidArgument, "amount \"1.005\" has 3 decimals; USD allows at most 2") {
                try await place { $0.wager = "1.005" }
            }
            await expectStatus(.invalidArgument, "bet_id must be 32 lowercase hex digits, got \"abc\"") {
                try await place { $0.betId = "abc" }
            }
            await expectStatus(nil) { try await place { $0.country = "US" } }
            let tooMany = WalletV1.PlaceBetsRequest(bets: (0..<501).map { _ in WalletFixture.bet("0.01") })
            await expectStatus(.invalidArgument, "a batch holds 1…500 bets, got 501") {
                try await fixture.service.placeBets(tooMany, context: context)
            }
            #expect(try await fixture.balance(of: user) == 500)
        }
    }

    @Test func batchSettlesIndependentBetsAndFailsAChainTogether() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("3.00", to: user)
            let context = WalletFixture.playerContext(user)
            var chained = [WalletFixture.bet("1.00"), WalletFixture.bet("100.00")]
            for index in chained.indices { chained[index].chainId = "c1" }
            let independent = [WalletFixture.bet("0.10"), WalletFixture.bet("50.00"), WalletFixture.bet("0.10")]
            let response = try await fixture.service.placeBets(
                WalletV1.PlaceBetsRequest(bets: chained + independent), context: context)
            #expect(response.results.map(\.status) == [.failed, .failed, .settled, .failed, .settled])
            #expect(response.results[0].errorMessage.hasPrefix("chain c1 failed"))
            #expect(response.results[3].errorCode == StatusCode.failedPrecondition.rawValue)
            let rows = try await fixture.pool.query("SELECT count(*) FROM bets WHERE status = 'settled'")
            #expect(try rows[0].decode(Int64.self, at: 0) == 2)
            try await fixture.expectLedgerInvariants()
        }
    }
}
