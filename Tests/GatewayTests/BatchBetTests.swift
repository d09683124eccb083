import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Gateway
@testable import GatewayBenchmarks

/// Bets of one batch reach the wallet as one PlaceBets call, each call still getting its own result.
@Suite("Gateway batch bets")
struct BatchBetTests {
    static func bet(
        _ name: String, id: String? = nil, wager: String = "1.00", chain: String = ""
    )
        -> GatewayV1.BatchCall
    {
        var bet = WalletV1.Bet()
        bet.gameId = "slots"
        bet.betId = id ?? name
        bet.wager = wager
        bet.currency = "COIN"
        bet.chainId = chain
        var call = GatewayV1.BatchCall()
        call.name = name
        call.method = BetCoalescer.placeBetMethod
        call.request = WalletV1.PlaceBetRequest(bet: bet).protobufBytes()
        return call
    }

    static func run(
        _ calls: [GatewayV1.BatchCall], harness: GatewayHarness, user: String = "player-1"
    ) async throws -> [GatewayV1.BatchResult] {
        let connection = try await harness.connect()
        defer { connection.close() }
        let bytes = try await connection.call(
            method: BatchPlan.batchMethod, request: BatchTests.batch(calls).protobufBytes(),
            options: bearer(try harness.token(for: user)))
        return try GatewayV1.BatchResponse(protobufBytes: bytes).results
    }

    static func betResult(_ result: GatewayV1.BatchResult) throws -> WalletV1.BetResult? {
        try WalletV1.PlaceBetResponse(protobufBytes: result.response).result
    }

    @Test func independentBetsReachTheWalletAsOnePlaceBets() async throws {
        let harness = try await GatewayHarness.start(withWallet: true)
        var calls = (0..<10).map { Self.bet("bet\($0)") }
        calls[4] = Self.bet("bet4", wager: StandInWallet.failingWager)
        calls.insert(BatchTests.call("echo", payload: "hello"), at: 3)
        let results = try await Self.run(calls, harness: harness)

        #expect(harness.wallet.placeBetsCalls.load(ordering: .relaxed) == 1)
        #expect(harness.wallet.placeBetCalls.load(ordering: .relaxed) == 0)
        #expect(harness.wallet.placeBetsSizes.withLock { $0 } == [10])
        #expect(results.map(\.name) == calls.map(\.name))
        #expect(try EchoV1.EchoResponse(protobufBytes: results[3].response).payload == Array("hello".utf8))
        for result in results where result.name.hasPrefix("bet") && result.name != "bet4" {
            #expect(result.code == .ok, "\(result.name): \(result.message)")
            let bet = try Self.betResult(result)
            #expect(bet?.betId == result.name)
            #expect(bet?.status == .settled)
            #expect(bet?.balance == "balance of player-1")
        }
        // The failed bet keeps its own status, as PlaceBet would have answered it.
        let failed = try #require(results.first { $0.name == "bet4" })
        #expect(failed.code == .failedPrecondition)
        #expect(failed.message == "insufficient funds for bet bet4")
        #expect(!failed.dependencyFailed && failed.response.isEmpty)
        try await harness.stop()
    }

    @Test func dependentCallsSeeEachBetsOwnResult() async throws {
        let harness = try await GatewayHarness.start(withWallet: true)
        var reference = GatewayV1.FieldReference()
        reference.fromCall = "first"
        reference.fromPath = "result.bet_id"
        reference.toPath = "bet.client_seed"
        var seeded = Self.bet("seeded")
        seeded.references = [reference]
        var afterFailure = Self.bet("afterFailure")
        afterFailure.dependsOn = ["broke"]
        let calls = [
            Self.bet("first"), Self.bet("broke", wager: StandInWallet.failingWager), Self.bet("other"), seeded,
            afterFailure,
        ]
        let results = try await Self.run(calls, harness: harness)

        #expect(results.map(\.code) == [.ok, .failedPrecondition, .ok, .ok, .aborted])
        #expect(results[4].dependencyFailed)
        // The reference read the first bet's own result out of the shared call's answer.
        #expect(try Self.betResult(results[3])?.clientSeed == "first")
        #expect(try Self.betResult(results[2])?.betId == "other")
        // The three independent bets shared one call; the dependent one became ready alone and went alone.
        #expect(harness.wallet.placeBetsSizes.withLock { $0 } == [3])
        #expect(harness.wallet.placeBetCalls.load(ordering: .relaxed) == 1)
        try await harness.stop()
    }

    @Test func betsThatWouldChangeMeaningTogetherAreSentAlone() async throws {
        let harness = try await GatewayHarness.start(withWallet: true)
        let calls = [
            Self.bet("a", id: "same"), Self.bet("b", id: "same"), Self.bet("c", chain: "chain-1"),
            Self.bet("d", chain: "chain-1"), Self.bet("e"),
        ]
        let results = try await Self.run(calls, harness: harness)

        #expect(results.allSatisfy { $0.code == .ok }, "\(results.map(\.message))")
        // A repeated bet id (a replay) and a second bet of one chain id keep their single-call meaning.
        #expect(harness.wallet.placeBetsSizes.withLock { $0 } == [3])
        #expect(harness.wallet.placeBetCalls.load(ordering: .relaxed) == 2)
        try await harness.stop()
    }

    @Test func aFailedSharedCallFailsEveryBetAlike() async throws {
        let down = try await GatewayHarness.start()
        let unavailable = try await Self.run((0..<4).map { Self.bet("bet\($0)") }, harness: down)
        #expect(unavailable.map(\.code) == Array(repeating: .unavailable, count: 4))
        #expect(unavailable.allSatisfy { $0.message.contains("wallet") })
        try await down.stop()

        // The shared call costs the user one call per bet, as the bets sent alone would.
        let limited = try await GatewayHarness.start(
            ["RAVE_GATEWAY_USER_RATE": "1", "RAVE_GATEWAY_USER_BURST": "10"], withWallet: true)
        let first = try await Self.run((0..<8).map { Self.bet("first\($0)") }, harness: limited)
        #expect(first.map(\.code) == Array(repeating: .ok, count: 8))
        // Eight of the ten tokens are spent (one refills per second): eight more bets in one shared call are
        // too many, though the call is one.
        let throttled = try await Self.run((0..<8).map { Self.bet("second\($0)") }, harness: limited)
        #expect(throttled.map(\.code) == Array(repeating: .resourceExhausted, count: 8))
        #expect(limited.wallet.placeBetsCalls.load(ordering: .relaxed) == 1)
        try await limited.stop()
    }
}
