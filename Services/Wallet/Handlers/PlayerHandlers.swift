import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry

/// rave.wallet.v1.Wallet: the player's bets, balances, history and provably fair seeds.
struct PlayerHandlers: WalletV1.WalletHandler {
    let dependencies: WalletDependencies

    /// Most bets one PlaceBets call may carry.
    static let maximumBatchSize = 500

    func placeBet(
        _ request: WalletV1.PlaceBetRequest, context: RequestContext
    ) async throws -> WalletV1.PlaceBetResponse {
        let caller = try context.requireUser()
        guard let bet = request.bet else { throw WalletError.invalidArgument("bet is required") }
        let prepared = try await prepare(bet, caller: caller, callerID: try await dependencies.playerID(of: caller))
        guard let result = try await dependencies.committer.settle([prepared]).first else {
            throw WalletError(.internalError, "the bet produced no result")
        }
        if result.status == .failed {
            throw RPCError(StatusCode(rawValue: result.errorCode), result.errorMessage)
        }
        return WalletV1.PlaceBetResponse(result: result)
    }

    func placeBets(
        _ request: WalletV1.PlaceBetsRequest, context: RequestContext
    ) async throws -> WalletV1.PlaceBetsResponse {
        let caller = try context.requireUser()
        guard (1...Self.maximumBatchSize).contains(request.bets.count) else {
            throw WalletError.invalidArgument(
                "a batch holds 1…\(Self.maximumBatchSize) bets, got \(request.bets.count)")
        }
        guard Set(request.bets.map(\.betId)).count == request.bets.count else {
            throw WalletError.invalidArgument("bet ids in one batch must be distinct")
        }
        // Group into units: each chain id is one all-or-nothing unit, every other bet its own.
        var units: [[Int]] = []
        var chainUnit: [String: Int] = [:]
        for (index, bet) in request.bets.enumerated() {
            if bet.chainId.isEmpty {
                units.append([index])
            } else if let unit = chainUnit[bet.chainId] {
                units[unit].append(index)
            } else {
                chainUnit[bet.chainId] = units.count
                units.append([index])
            }
        }
        let callerID = try await dependencies.playerID(of: caller)
        var results = [WalletV1.BetResult](repeating: WalletV1.BetResult(), count: request.bets.count)
        // Prepared in order in this task (the catalog is cached, so this rarely waits), then every unit whose input
        // holds goes to the committer in one call: a task and a suspension per unit cost more than the bet's math.
        var ready: [[PreparedBet]] = []
        var readyUnits: [[Int]] = []
        for unit in units {
            do {
                var prepared: [PreparedBet] = []
                for index in unit {
                    prepared.append(try await prepare(request.bets[index], caller: caller, callerID: callerID))
                }
                ready.append(prepared)
                readyUnits.append(unit)
            } catch {
                fail(unit, of: request.bets, with: error, requestID: context.requestID, into: &results)
            }
        }
        let outcomes = await dependencies.committer.settle(units: ready)
        for (unit, outcome) in zip(readyUnits, outcomes) {
            switch outcome {
            case .success(let settled):
                for (index, result) in zip(unit, settled) { results[index] = result }
            case .failure(let error):
                fail(unit, of: request.bets, with: error, requestID: context.requestID, into: &results)
            }
        }
        return WalletV1.PlaceBetsResponse(results: results)
    }

    /// Fails every bet of `unit` with `error`; nothing of it was stored.
    private func fail(
        _ unit: [Int], of bets: [WalletV1.Bet], with error: any Error, requestID: String,
        into results: inout [WalletV1.BetResult]
    ) {
        let status = RPCError(mapping: error, requestID: requestID)
        for index in unit {
            var result = WalletV1.BetResult()
            result.betId = bets[index].betId
            result.status = .failed
            result.errorCode = status.code.rawValue
            result.errorMessage =
                unit.count > 1 ? "chain \(bets[index].chainId) failed: \(status.message)" : status.message
            results[index] = result
        }
    }

    private func prepare(_ bet: WalletV1.Bet, caller: Caller, callerID: RaveID) async throws -> PreparedBet {
        let prepared = try await PreparedBet.prepare(
            bet, caller: caller, callerID: callerID, catalog: dependencies.catalog, database: dependencies.pool)
        if prepared.kind.movesMoney {
            // Created outside the bet's transaction so its cached id is committed.
            _ = try await dependencies.ledger.ensureAccount(prepared.houseAccount, on: dependencies.pool)
        }
        return prepared
    }
}
