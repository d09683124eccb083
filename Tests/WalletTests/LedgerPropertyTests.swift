import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Wallet

@Suite struct LedgerPropertyTests {
    /// Many concurrent clients deposit, bet, credit-bet and batch, retrying random requests with the same ids:
    /// afterwards the ledger sums to zero, balances equal their entries, and each acknowledged bet exists once.
    @Test func concurrentClientsWithRetriesKeepTheLedgerConsistent() async throws {
        try await WalletFixture.with { fixture in
            let users = (0..<8).map { _ in RaveID.random() }
            let acknowledged = try await withThrowingTaskGroup(of: [String].self) { group in
                for (index, user) in users.enumerated() {
                    group.addTask {
                        var generator = SplitMix64(seed: UInt64(index + 1))
                        return try await Self.runClient(user: user, fixture: fixture, generator: &generator)
                    }
                }
                var all: [String] = []
                for try await ids in group { all += ids }
                return all
            }
            try await fixture.expectLedgerInvariants()
            let rows = try await fixture.pool.query("SELECT bet_id FROM bets WHERE status = 'settled'")
            let stored = try rows.map { try $0.decode(RaveID.self, at: 0).hex }
            #expect(Set(stored).count == stored.count)
            #expect(Set(acknowledged) == Set(stored))
            let wagers = try await fixture.pool.query(
                "SELECT count(*) FROM transfers WHERE code = 'bet_wager'")
            let backed = try await fixture.pool.query(
                "SELECT count(*) FROM bets WHERE status = 'settled' AND kind IN ('backed', 'credit')")
            #expect(try wagers[0].decode(Int64.self, at: 0) == backed[0].decode(Int64.self, at: 0))
        }
    }

    /// One client: a random mix of operations; returns the ids of settled bets it was told about.
    static func runClient(
        user: RaveID, fixture: WalletFixture, generator: inout SplitMix64
    ) async throws -> [String] {
        let context = WalletFixture.playerContext(user)
        try await fixture.deposit("20.00", to: user)
        try await fixture.deposit("5.00", to: user, game: "slot")
        var settled: Set<String> = []
        var sent: [WalletV1.PlaceBetsRequest] = []
        for _ in 0..<25 {
            var request: WalletV1.PlaceBetsRequest
            if !sent.isEmpty, Int.random(in: 0..<4, using: &generator) == 0 {
                // A retry of something sent before, with the same bet ids.
                request = sent[Int.random(in: 0..<sent.count, using: &generator)]
            } else {
                request = WalletV1.PlaceBetsRequest()
                for _ in 0..<Int.random(in: 1...6, using: &generator) {
                    let wager = ["0.10", "0.50", "1.00", "3.00"][Int.random(in: 0..<4, using: &generator)]
                    var bet = WalletFixture.bet(wager, game: Bool.random(using: &generator) ? "slot" : "dice")
                    bet.creditGameId = Int.random(in: 0..<5, using: &generator) == 0 ? "slot" : ""
                    bet.unbacked = Int.random(in: 0..<6, using: &generator) == 0
                    bet.chainId = Int.random(in: 0..<3, using: &generator) == 0 ? "chain" : ""
                    request.bets.append(bet)
                }
                sent.append(request)
            }
            if Int.random(in: 0..<8, using: &generator) == 0 { try await fixture.deposit("1.00", to: user) }
            let response = try await fixture.service.placeBets(request, context: context)
            for result in response.results where result.status == .settled && !result.balance.isEmpty {
                settled.insert(result.betId)
            }
            for result in response.results where result.status == .settled && result.balance.isEmpty {
                settled.insert(result.betId)
            }
        }
        return Array(settled)
    }
}

@Suite struct WalletQueryTests {
    @Test func mergeMovesBalancesByTransfersOnce() async throws {
        try await WalletFixture.with { fixture in
            let source = RaveID.random()
            let target = RaveID.random()
            try await fixture.deposit("4.00", to: source)
            try await fixture.deposit("1.00", to: target)
            try await fixture.deposit("2.00", to: source, game: "slot")
            let request = MergeV1.MergeUsersRequest(
                mergeId: "m1", sourceUserId: source.hex, targetUserId: target.hex)
            for _ in 0..<2 { _ = try await fixture.merge.mergeUsers(request, context: WalletFixture.serviceContext()) }
            #expect(try await fixture.balance(of: source) == 0)
            #expect(try await fixture.balance(of: target) == 500)
            let wallet = try await fixture.service.getWallet(
                WalletV1.GetWalletRequest(), context: WalletFixture.playerContext(target))
            #expect(wallet.balances.contains { $0.gameId == "slot" && $0.amount == "2.00" })
            let merges = try await fixture.pool.query("SELECT count(*) FROM transfers WHERE code = 'merge'")
            #expect(try merges[0].decode(Int64.self, at: 0) == 2)
            try await fixture.expectLedgerInvariants()
        }
    }

    @Test func verifyRecomputesABetAfterTheSeedIsRevealed() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            let context = WalletFixture.playerContext(user)
            let commitment = try await fixture.service.getServerSeed(WalletV1.GetServerSeedRequest(), context: context)
            var bet = WalletFixture.bet("1.00", game: "slot")
            bet.unbacked = true
            let result = try #require(
                try await fixture.service.placeBet(WalletV1.PlaceBetRequest(bet: bet), context: context).result)
            #expect(result.serverSeedHash == commitment.serverSeedHash)
            let hidden = try await fixture.service.verifyBet(
                WalletV1.VerifyBetRequest(betId: bet.betId), context: context)
            #expect(!hidden.revealed && hidden.seed == nil)
            let rotated = try await fixture.service.rotateServerSeed(
                WalletV1.RotateServerSeedRequest(), context: context)
            #expect(rotated.revealed?.serverSeedHash == commitment.serverSeedHash)
            #expect(rotated.nextServerSeedHash != commitment.serverSeedHash)
            let verified = try await fixture.service.verifyBet(
                WalletV1.VerifyBetRequest(betId: bet.betId), context: context)
            #expect(verified.revealed && verified.matches)
            #expect(verified.outcome == result.outcome)
        }
    }

    @Test func transactionHistoryPagesByKeyset() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            for _ in 0..<5 { try await fixture.deposit("1.00", to: user) }
            let context = WalletFixture.playerContext(user)
            var token = ""
            var amounts: [String] = []
            repeat {
                let page = try await fixture.service.listTransactions(
                    WalletV1.ListTransactionsRequest(pageSize: 2, pageToken: token), context: context)
                amounts += page.entries.map(\.balanceAfter)
                token = page.nextPageToken
            } while !token.isEmpty
            #expect(amounts == ["5.00", "4.00", "3.00", "2.00", "1.00"])
            await expectStatus(.invalidArgument, "page_size must be 1…100 (0 means 20), got 500") {
                try await fixture.service.listTransactions(
                    WalletV1.ListTransactionsRequest(pageSize: 500), context: context)
            }
        }
    }

    @Test func operatorDepositIsIdempotentByOperationId() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            fixture.identity.add(user)
            let transfer = WalletV1.OperatorTransfer(
                operationId: "op-1", userId: user.hex, currency: "USD", economy: .real, amount: "2.50")
            let context = WalletFixture.adminContext()
            let first = try await fixture.admin.deposit(WalletV1.DepositRequest(transfer: transfer), context: context)
            let again = try await fixture.admin.deposit(WalletV1.DepositRequest(transfer: transfer), context: context)
            #expect(first == again)
            #expect(try await fixture.balance(of: user) == 250)
            var other = transfer
            other.amount = "3.00"
            await expectStatus(nil) {
                try await fixture.admin.deposit(WalletV1.DepositRequest(transfer: other), context: context)
            }
            var withdrawal = transfer
            withdrawal.operationId = "op-2"
            withdrawal.amount = "9.00"
            await expectStatus(.failedPrecondition, "insufficient funds") {
                try await fixture.admin.withdraw(WalletV1.WithdrawRequest(transfer: withdrawal), context: context)
            }
            try await fixture.expectLedgerInvariants()
        }
    }
}
