import RaveMessages
import RavePostgres
import Testing

@testable import Wallet

/// The SQL the operator methods, bet verification and the merge participant run, in their stores.
@Suite("Wallet: stores behind the handlers")
struct WalletStoreTests {
    @Test func anOperationIsAnsweredByItsIDWithItsRequestHashAndResult() async throws {
        try await WalletFixture.with { fixture in
            let store = OperationStore()
            #expect(try await store.operation("op-store", on: fixture.pool) == nil)
            try await fixture.pool.transaction { transaction in
                try await store.record(
                    "op-store", kind: "deposit", requestHash: "hash", result: [1, 2, 3], in: transaction)
            }
            let stored = try #require(try await store.operation("op-store", on: fixture.pool))
            #expect(stored.requestHash == "hash" && stored.result == [1, 2, 3])
        }
    }

    @Test func aBetNobodyPlacedHasNothingToVerify() async throws {
        try await WalletFixture.with { fixture in
            let bet = try await BetStore().settledBet(user: .random(), betID: .random(), on: fixture.pool)
            #expect(bet == nil)
        }
    }

    @Test func aMergeIDIsRecordedOnceAndASourceWithoutAccountsHasNoneToMove() async throws {
        try await WalletFixture.with { fixture in
            let (source, target) = (RaveID.random(), RaveID.random())
            let store = MergeStore()
            let accounts = try await store.accounts(of: source, target: target, locked: false, on: fixture.pool)
            #expect(accounts.isEmpty)
            let (first, again) = try await fixture.pool.transaction { transaction in
                (
                    try await store.record(mergeID: "m-store", source: source, target: target, in: transaction),
                    try await store.record(mergeID: "m-store", source: source, target: target, in: transaction)
                )
            }
            #expect(first && !again)
        }
    }
}
