import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry

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
        /// PlaceBets calls in flight at once.
        var batchConcurrency = 8
        /// Bets per PlaceBets call.
        var batchSize = 50
    }

    let dependencies: WalletDependencies
    let parameters: Parameters

    static let appID = "bench-app"
    static let gameID = "bench-slot"

    /// Creates the currency, the game and the eligibility the bets need; safe to repeat.
    func setUp() async throws {
        let admin = WalletAdminService(dependencies: dependencies)
        let context = Self.context(caller: Caller(userID: "", appID: "", sessionID: "", scopes: [Caller.adminScope]))
        _ = try await admin.createCurrency(.init(code: "USD", decimals: 2), context: context)
        _ = try await admin.createGame(
            .init(game: WalletV1.Game(gameId: Self.gameID, name: "Bench slot", math: .slot(Self.slot()))),
            context: context)
        _ = try await admin.setEligibility(.init(appId: Self.appID, realMoneyCountries: ["GB"]), context: context)
    }

    /// Funds `count` new players with 1,000,000.00 USD each.
    func fundedPlayers(_ count: Int) async throws -> [RaveID] {
        let admin = WalletAdminService(dependencies: dependencies)
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

    /// Backed PlaceBet calls, one in flight per worker.
    func measureSingleBets() async throws -> LoadMeasurement {
        let players = try await fundedPlayers(parameters.singleConcurrency)
        let service = WalletService(dependencies: dependencies)
        return await ClosedLoopLoad.measure(
            "backed_bets_\(parameters.singleConcurrency)x1", concurrency: parameters.singleConcurrency,
            seconds: parameters.seconds
        ) { worker, _ in
            let player = players[worker]
            let response = try await service.placeBet(.init(bet: Self.bet()), context: Self.playerContext(player))
            guard response.result?.status == .settled else { throw RPCError.internalError("a bet did not settle") }
        }
    }

    /// Backed PlaceBets calls of `batchSize` bets; the measurement counts bets, not calls.
    func measureBatches() async throws -> LoadMeasurement {
        let players = try await fundedPlayers(parameters.batchConcurrency)
        let service = WalletService(dependencies: dependencies)
        let size = parameters.batchSize
        var measurement = await ClosedLoopLoad.measure(
            "backed_bets_batches_of_\(size)", concurrency: parameters.batchConcurrency, seconds: parameters.seconds
        ) { worker, _ in
            let request = WalletV1.PlaceBetsRequest(bets: (0..<size).map { _ in Self.bet() })
            let response = try await service.placeBets(request, context: Self.playerContext(players[worker]))
            guard response.results.allSatisfy({ $0.status == .settled }) else {
                throw RPCError.internalError("a bet of the batch did not settle")
            }
        }
        measurement.calls *= size
        return measurement
    }

    /// What is wrong with the ledger after the load, or nil.
    ///
    /// Entries must sum to zero, per transfer and in total, and every player balance must equal its entries' sum.
    func ledgerProblems() async throws -> String? {
        let rows = try await dependencies.pool.query(
            """
            SELECT (SELECT coalesce(sum(amount), 0)::bigint FROM ledger_entries),
                (SELECT count(*) FROM (SELECT 1 FROM ledger_entries GROUP BY transfer_id
                    HAVING sum(amount) <> 0 OR count(*) <> 2) t),
                (SELECT count(*) FROM accounts a WHERE a.balance IS NOT NULL AND a.balance <> (
                    SELECT coalesce(sum(e.amount), 0) FROM ledger_entries e WHERE e.account_id = a.account_id))
            """)
        let total = try rows[0].decode(Int64.self, at: 0)
        let unbalanced = try rows[0].decode(Int64.self, at: 1)
        let mismatched = try rows[0].decode(Int64.self, at: 2)
        if total == 0 && unbalanced == 0 && mismatched == 0 { return nil }
        return "entries sum to \(total), \(unbalanced) unbalanced transfers, \(mismatched) balances off their entries"
    }

    static func bet() -> WalletV1.Bet {
        WalletV1.Bet(
            gameId: gameID, betId: RaveID.random().hex, wager: "0.10", currency: "USD", economy: .real,
            clientSeed: "bench", country: "GB")
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
