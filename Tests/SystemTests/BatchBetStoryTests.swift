import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

/// Story 4 of the end-to-end stories (docs/TESTING.md): a client sends a batch of bets plus a wallet query that depends on them, through the real
/// gateway and wallet executables; the balances and the ledger agree.
@Suite("System: batch bets", .timeLimit(.minutes(3)))
struct BatchBetStoryTests {
    /// The gateway's limit is 50 calls per batch, the query included, so 49 bets and the query fill one batch.
    static let betCount = 49

    @Test func batchOfBetsAndADependentWalletQueryAgreeWithTheLedger() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication()
            let player = try await stack.signUp(appID: appID, name: "Dana")
            let walletAdmin = WalletV1.WalletAdminClient(caller: stack.admin)
            _ = try await walletAdmin.createCurrency(.init(code: "GOLD", decimals: 2))
            let dice = WalletV1.OddsDefinition(
                sides: 6, winningNumbers: 3, multiplierNumerator: 2, multiplierDenominator: 1)
            _ = try await walletAdmin.createGame(.init(game: .init(gameId: "dice", name: "Dice", math: .odds(dice))))
            _ = try await walletAdmin.deposit(
                .init(
                    transfer: .init(
                        operationId: UUID().hex, userId: player.userID, currency: "GOLD", economy: .sandbox,
                        amount: "100.00", reason: "welcome")))

            let bets = (0..<Self.betCount).map { index in
                WalletV1.Bet(
                    gameId: "dice", betId: UUID().hex, wager: "1.\(String(format: "%02d", index))", currency: "GOLD",
                    economy: .sandbox, clientSeed: "story-4")
            }
            let request = Self.batch(bets)
            let response = try await player.batch.batch(request)
            #expect(response.results.count == Self.betCount + 1)
            #expect(response.results.map(\.name) == request.calls.map(\.name))

            var expected = 100_00
            var placed: [WalletV1.BetResult] = []
            for (bet, result) in zip(bets, response.results) {
                #expect(result.code == .ok, "\(result.name): \(result.message)")
                let placedBet = try #require(try WalletV1.PlaceBetResponse(protobufBytes: result.response).result)
                #expect(placedBet.betId == bet.betId)
                #expect(placedBet.status == .settled)
                #expect(try Money.minor(placedBet.wager) == Money.minor(bet.wager))
                expected += try Money.minor(placedBet.payout) - Money.minor(placedBet.wager)
                placed.append(placedBet)
            }
            let query = try #require(response.results.last)
            #expect(query.code == .ok, "wallet: \(query.message)")
            let queried = try WalletV1.GetWalletResponse(protobufBytes: query.response)
            #expect(try Self.gold(queried) == expected)

            // The ledger, read back page by page, holds the deposit and exactly one entry per wager and payout.
            let entries = try await Self.ledger(player)
            #expect(entries.reduce(0) { $0 + ((try? Money.minor($1.amount)) ?? 0) } == expected)
            #expect(entries.filter { $0.code == "deposit" }.count == 1)
            for bet in placed {
                let wagers = entries.filter { $0.betId == bet.betId && $0.code == "bet_wager" }
                let payouts = entries.filter { $0.betId == bet.betId && $0.code == "bet_payout" }
                let wager = try Money.minor(bet.wager)
                let payout = try Money.minor(bet.payout)
                #expect(wagers.count == 1 && (try? Money.minor(wagers[0].amount)) == -wager)
                #expect(payouts.count == (payout > 0 ? 1 : 0))
            }

            // Replaying the whole batch returns the stored results and moves no money.
            let replay = try await player.batch.batch(request)
            for (first, again) in zip(response.results.dropLast(), replay.results.dropLast()) {
                #expect(again.code == .ok)
                let before = try WalletV1.PlaceBetResponse(protobufBytes: first.response).result
                let after = try WalletV1.PlaceBetResponse(protobufBytes: again.response).result
                #expect(before?.payout == after?.payout && before?.outcome?.number == after?.outcome?.number)
            }
            let replayedWallet = try WalletV1.GetWalletResponse(
                protobufBytes: try #require(replay.results.last).response)
            #expect(try Self.gold(replayedWallet) == expected)
            #expect(try await Self.ledger(player).count == entries.count)

            // What no client can see: every balance equals the movements of its account.
            #expect(try await stack.walletBalancesOutOfLine() == 0)
        }
    }

    /// One `PlaceBet` call per bet and a `GetWallet` that depends on all of them.
    static func batch(_ bets: [WalletV1.Bet]) -> GatewayV1.BatchRequest {
        var calls = bets.enumerated().map { index, bet in
            GatewayV1.BatchCall(
                name: "bet-\(index)", method: "rave.wallet.v1.Wallet/PlaceBet",
                request: WalletV1.PlaceBetRequest(bet: bet).protobufBytes())
        }
        calls.append(
            GatewayV1.BatchCall(
                name: "wallet", method: "rave.wallet.v1.Wallet/GetWallet",
                request: WalletV1.GetWalletRequest().protobufBytes(), dependsOn: calls.map(\.name)))
        return GatewayV1.BatchRequest(calls: calls)
    }

    /// The sandbox GOLD balance in minor units.
    static func gold(_ wallet: WalletV1.GetWalletResponse) throws -> Int {
        let balance = try #require(wallet.balances.first { $0.currency == "GOLD" && $0.gameId.isEmpty })
        return try Money.minor(balance.amount)
    }

    /// Every ledger entry of the player's GOLD wallet, following page tokens.
    static func ledger(_ player: PlayerSession) async throws -> [WalletV1.LedgerEntry] {
        var entries: [WalletV1.LedgerEntry] = []
        var token = ""
        repeat {
            let page = try await player.wallet.listTransactions(
                .init(currency: "GOLD", economy: .sandbox, pageSize: 100, pageToken: token))
            entries += page.entries
            token = page.nextPageToken
        } while !token.isEmpty
        return entries
    }
}

/// Decimal amounts of a two-decimal currency as integer minor units, the way the wallet stores them.
enum Money {
    static func minor(_ text: String) throws -> Int {
        let negative = text.hasPrefix("-")
        let digits = negative ? String(text.dropFirst()) : text
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard let whole = Int(parts[0]), parts.count <= 2 else { throw StackError("not an amount: \"\(text)\"") }
        let fraction = parts.count == 2 ? String(parts[1]).padding(toLength: 2, withPad: "0", startingAt: 0) : "00"
        guard let cents = Int(fraction) else { throw StackError("not an amount: \"\(text)\"") }
        return (negative ? -1 : 1) * (whole * 100 + cents)
    }
}

extension UUID {
    /// 32 lowercase hex digits, the wire form of ids.
    var hex: String { uuidString.replacingOccurrences(of: "-", with: "").lowercased() }
}
