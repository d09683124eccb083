import RaveCrypto
import RaveMessages
import RavePostgres
import Testing

@testable import Wallet

/// Request hashes are computed as bytes but stored as the lowercase hex text every release wrote, so the rows of
/// earlier releases answer their replays and wallets of both releases share one table during a rolling update.
@Suite struct RequestHashTests {
    /// A round that undoes a unit (a chain short of money) cuts its hashes and results back exactly: every stored
    /// row keeps its own hash and result.
    @Test func bulkRoundStoresEachBetsOwnHashAndResult() async throws {
        try await WalletFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.deposit("1.00", to: user)
            let context = WalletFixture.playerContext(user)
            var bets = (0..<3).map { _ in WalletFixture.bet("0.10") }
            // A chain that cannot be paid in the middle of the batch: undone, then stored as failed.
            var chain = [WalletFixture.bet("0.50"), WalletFixture.bet("500.00")]
            for index in chain.indices { chain[index].chainId = "c" }
            bets.insert(contentsOf: chain, at: 1)
            let request = WalletV1.PlaceBetsRequest(bets: bets)
            let answer = try await fixture.service.placeBets(request, context: context)
            #expect(answer.results.filter { $0.status == .failed }.count == 2)
            // Replaying the whole batch answers from the stored rows: each row holds its own result.
            #expect(try await fixture.service.placeBets(request, context: context) == answer)
            let caller = try #require(context.caller)
            for bet in bets {
                let prepared = try await PreparedBet.prepare(
                    bet, caller: caller, catalog: fixture.dependencies.catalog, database: fixture.pool)
                let rows = try await fixture.pool.query(
                    PostgresQuery(
                        "SELECT request_hash FROM bets WHERE user_id = $1 AND bet_id = $2", [user, prepared.betID]))
                #expect(try rows[0].decode(String.self, at: 0) == Hex.encode(prepared.requestHash))
            }
        }
    }
}
