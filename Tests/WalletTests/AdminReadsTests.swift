import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Wallet

/// The operators' reads: the catalog's lists and a player's ledger, as the console shows them.
@Suite struct AdminReadsTests {
    @Test func listCurrenciesAndGamesShowTheCatalogWithEachGamesReturnToPlayer() async throws {
        try await WalletFixture.with { fixture in
            let context = WalletFixture.adminContext()
            _ = try await fixture.admin.createCurrency(.init(code: "GOLD", decimals: 0), context: context)
            let currencies = try await fixture.admin.listCurrencies(.init(), context: context)
            #expect(currencies.currencies == [.init(code: "GOLD", decimals: 0), .init(code: "USD", decimals: 2)])
            let games = try await fixture.admin.listGames(.init(), context: context)
            #expect(games.games.map(\.gameId) == ["dice", "slot"])
            // Dice: 3 winning sides of 6 paying 1.9x returns 0.95.
            let dice = try #require(games.games.first)
            #expect(dice.returnToPlayer.hasPrefix("0.95"))
            #expect(games.games.allSatisfy { !$0.returnToPlayer.isEmpty })
            let players = try await fixture.service.listGames(.init(), context: WalletFixture.playerContext(.random()))
            #expect(games.games == players.games)
        }
    }

    @Test func listUserTransactionsPagesAPlayersLedgerAsThePlayerSeesIt() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("5.00", to: user)
            try await fixture.deposit("2.50", to: user)
            try await fixture.deposit("1.00", to: user, economy: .sandbox)
            let context = WalletFixture.adminContext()
            let first = try await fixture.admin.listUserTransactions(
                .init(userId: user.hex, economy: .real, pageSize: 1), context: context)
            #expect(first.entries.map(\.amount) == ["2.50"])
            #expect(first.entries.first?.balanceAfter == "7.50" && first.entries.first?.code == "deposit")
            let second = try await fixture.admin.listUserTransactions(
                .init(userId: user.hex, economy: .real, pageSize: 1, pageToken: first.nextPageToken), context: context)
            #expect(second.entries.map(\.amount) == ["5.00"])
            let all = try await fixture.admin.listUserTransactions(.init(userId: user.hex), context: context)
            let own = try await fixture.service.listTransactions(.init(), context: WalletFixture.playerContext(user))
            #expect(all.entries.count == 3)
            #expect(all == own)
        }
    }

    @Test func operatorReadsRefuseBadInputInOurWordsAndPlayers() async throws {
        try await WalletFixture.with { fixture in
            let context = WalletFixture.adminContext()
            let user = RaveID.random().hex
            await expectStatus(.invalidArgument, "user_id must be 32 lowercase hex digits, got \"me\"") {
                try await fixture.admin.listUserTransactions(.init(userId: "me"), context: context)
            }
            await expectStatus(.invalidArgument, "page_size must be 1…100 (0 means 20), got 500") {
                try await fixture.admin.listUserTransactions(.init(userId: user, pageSize: 500), context: context)
            }
            await expectStatus(.invalidArgument, "page_token is not one this method returned") {
                try await fixture.admin.listUserTransactions(.init(userId: user, pageToken: "-4"), context: context)
            }
            await expectStatus(.permissionDenied) {
                try await fixture.admin.listCurrencies(.init(), context: WalletFixture.playerContext(.random()))
            }
        }
    }
}
