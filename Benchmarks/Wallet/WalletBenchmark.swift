import BenchmarkSupport
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import Synchronization
import Wallet

/// Throughput of backed bets, called in-process against a real PostgreSQL: single PlaceBet calls from many
/// callers at once, and PlaceBets batches.
///
/// Each worker plays as its own funded player (real economy, authenticated, eligible country) on a 3×3 slot with
/// five lines, so every bet moves money: a wager transfer, a payout transfer when it wins, the bet row.
struct WalletBenchmark: Sendable {
    /// What to run; every field has a default fit for `make bench` on the project's 2-core machines.
    struct Parameters: Sendable {
        /// Seconds per measured operation.
        var seconds: Double = 5
        /// PlaceBet calls in flight at once (one per worker).
        var singleConcurrency = 50
        /// PlaceBets calls in flight at once: as many as the baseline's clients (`pgbench -c 16`), so the ratio
        /// compares the same number of callers, each with one request in flight.
        var batchConcurrency = 16
        /// Bets per PlaceBets call.
        var batchSize = 50
    }

    let dependencies: WalletDependencies
    let parameters: Parameters

    /// An app id as the protocol writes them (the wallet refuses other spellings).
    static let appID = RaveID(high: 0x5eed_0000_0000_0006, low: 6).hex
    static let gameID = "bench-slot"

    /// Creates the currency, the game and the eligibility the bets need; safe to repeat.
    func setUp() async throws {
        let admin = dependencies.adminHandler
        let context = Self.context(caller: Caller(userID: "", appID: "", sessionID: "", scopes: [Caller.adminScope]))
        _ = try await admin.createCurrency(.init(code: "USD", decimals: 2), context: context)
        _ = try await admin.createGame(
            .init(game: WalletV1.Game(gameId: Self.gameID, name: "Bench slot", math: .slot(Self.slot()))),
            context: context)
        _ = try await admin.setEligibility(.init(appId: Self.appID, realMoneyCountries: ["GB"]), context: context)
    }

    /// Funds `count` new players with 1,000,000.00 USD each.
    func fundedPlayers(_ count: Int) async throws -> [RaveID] {
        let admin = dependencies.adminHandler
        let context = Self.context(caller: Caller(userID: "", appID: "", sessionID: "", scopes: [Caller.adminScope]))
        var players: [RaveID] = []
        for _ in 0..<count {
            let player = RaveID.random()
            let transfer = WalletV1.OperatorTransfer(
                operationId: RaveID.random().hex, userId: player.hex, currency: "USD", economy: .real,
                amount: "1000000.00")
            _ = try await admin.deposit(.init(transfer: transfer), context: context)
            players.append(player)
        }
        return players
    }

    /// A measurement and the CPU time it took (the wallet's and the database server's).
    struct Measured: Sendable {
        var load: LoadMeasurement
        var cpu: CPUTime
        /// Group-commit rounds run meanwhile.
        var rounds: Int

        /// "wallet 20 µs + postgres 25 µs = 45 µs CPU per bet, 180 bets per round".
        var perBetLine: String {
            let perRound = rounds > 0 ? "\(load.calls / rounds)" : "no"
            return cpu.perBetLine(bets: load.calls) + ", \(perRound) bets per round"
        }
    }

    /// Backed PlaceBet calls, one in flight per worker.
    func measureSingleBets() async throws -> Measured {
        let players = try await fundedPlayers(parameters.singleConcurrency)
        let service = dependencies.walletHandler
        let start = try await CPUTime.now(database: dependencies.pool)
        let rounds = dependencies.roundsRun
        let load = await ClosedLoopLoad.measure(
            "backed_bets_\(parameters.singleConcurrency)x1", concurrency: parameters.singleConcurrency,
            seconds: parameters.seconds
        ) { worker, _ in
            let player = players[worker]
            let response = try await service.placeBet(.init(bet: Self.bet()), context: Self.playerContext(player))
            guard response.result?.status == .settled else { throw RPCError.internalError("a bet did not settle") }
        }
        return Measured(
            load: load, cpu: try await CPUTime.now(database: dependencies.pool) - start,
            rounds: dependencies.roundsRun - rounds)
    }

    /// Backed PlaceBets calls of `batchSize` bets; the measurement counts bets, not calls.
    func measureBatches() async throws -> Measured {
        let players = try await fundedPlayers(parameters.batchConcurrency)
        let service = dependencies.walletHandler
        let size = parameters.batchSize
        let ids = BetIDs()
        let start = try await CPUTime.now(database: dependencies.pool)
        let rounds = dependencies.roundsRun
        var measurement = await ClosedLoopLoad.measure(
            "backed_bets_batches_of_\(size)", concurrency: parameters.batchConcurrency, seconds: parameters.seconds
        ) { worker, _ in
            let request = WalletV1.PlaceBetsRequest(bets: ids.next(size).map { Self.bet(id: $0) })
            let response = try await service.placeBets(request, context: Self.playerContext(players[worker]))
            guard response.results.allSatisfy({ $0.status == .settled }) else {
                throw RPCError.internalError("a bet of the batch did not settle")
            }
        }
        measurement.calls *= size
        return Measured(
            load: measurement, cpu: try await CPUTime.now(database: dependencies.pool) - start,
            rounds: dependencies.roundsRun - rounds)
    }

    /// What is wrong with the ledger after the load, or nil.
    ///
    /// All sides (-amount on from_account, +amount on to_account) must sum to zero and every player balance must
    /// equal the signed sum of its transfers.
    func ledgerProblems() async throws -> String? {
        let rows = try await dependencies.pool.query(
            """
            WITH side (account_id, amount) AS (
                SELECT from_account, -amount FROM transfers UNION ALL SELECT to_account, amount FROM transfers),
            total AS (SELECT account_id, sum(amount) AS amount FROM side GROUP BY account_id)
            SELECT (SELECT coalesce(sum(amount), 0)::bigint FROM total),
                (SELECT count(*) FROM accounts a LEFT JOIN total t USING (account_id)
                    WHERE a.balance IS NOT NULL AND a.balance <> coalesce(t.amount, 0))
            """)
        let total = try rows[0].decode(Int64.self, at: 0)
        let mismatched = try rows[0].decode(Int64.self, at: 1)
        if total == 0 && mismatched == 0 { return nil }
        return "transfers sum to \(total), \(mismatched) balances off their transfers"
    }

    static func bet(id: RaveID = .random()) -> WalletV1.Bet {
        WalletV1.Bet(
            gameId: gameID, betId: id.hex, wager: "0.10", currency: "USD", economy: .real,
            clientSeed: "bench", country: "GB")
    }

    /// Bet ids for the batch load: random version-4 ids, like a client's, from a generator seeded once.
    ///
    /// `RaveID.random()` asks the kernel twice per id; for 50 ids a call that was about 2 % of this process's CPU,
    /// spent on the client's side of the load, which the wallet would not pay in production.
    final class BetIDs: Sendable {
        private let state: Mutex<UInt64>

        init() {
            var system = SystemRandomNumberGenerator()
            state = Mutex(system.next())
        }

        func next(_ count: Int) -> [RaveID] {
            state.withLock { state in
                (0..<count).map { _ in
                    let high = (Self.splitMix(&state) & ~0xf000) | 0x4000
                    let low = (Self.splitMix(&state) & ~(0xc000_0000_0000_0000 as UInt64)) | 0x8000_0000_0000_0000
                    return RaveID(high: high, low: low)
                }
            }
        }

        /// SplitMix64: every 64-bit value once per period, well mixed; enough for ids that must only be distinct.
        private static func splitMix(_ state: inout UInt64) -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var value = state
            value = (value ^ (value >> 30)) &* 0xbf58_476d_1ce4_e5b9
            value = (value ^ (value >> 27)) &* 0x94d0_49bb_1331_11eb
            return value ^ (value >> 31)
        }
    }

    static func playerContext(_ player: RaveID) -> RequestContext {
        context(
            caller: Caller(userID: player.hex, appID: appID, sessionID: "bench", scopes: [Caller.authenticatedScope]))
    }

    static func context(caller: Caller) -> RequestContext {
        RequestContext(
            requestID: "bench", method: "bench", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:0", certificateCommonName: nil), caller: caller,
            logger: Logger(label: "wallet-bench", level: .error))
    }

    /// A 3-reel, 3-row slot with five lines and a return to player near 95%.
    static func slot() -> WalletV1.SlotDefinition {
        var slot = WalletV1.SlotDefinition()
        slot.reels = [
            WalletV1.Reel(symbols: ["7", "BAR", "A", "K", "Q", "A", "K", "Q", "BAR", "J"]),
            WalletV1.Reel(symbols: ["A", "7", "K", "Q", "BAR", "J", "A", "K", "Q", "J"]),
            WalletV1.Reel(symbols: ["K", "A", "7", "Q", "J", "BAR", "A", "K", "Q", "J"]),
        ]
        slot.rows = 3
        slot.paylines = [[1, 1, 1], [0, 0, 0], [2, 2, 2], [0, 1, 2], [2, 1, 0]].map { WalletV1.Payline(rows: $0) }
        slot.paytable = [
            ("7", 3, 100), ("BAR", 3, 40), ("A", 3, 20), ("K", 3, 15), ("Q", 3, 10), ("J", 3, 8), ("A", 2, 2),
            ("7", 2, 5), ("7", 1, 1),
        ].map { WalletV1.PaytableEntry(symbol: $0.0, count: Int32($0.1), multiplier: Int64($0.2)) }
        return slot
    }
}
