import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Everything the handlers share: the pool, the stores and the group committer.
struct WalletDependencies: Sendable {
    let pool: PostgresPool
    let catalog: CatalogStore
    let ledger: LedgerStore
    let bets: BetStore
    let queries: QueryStore
    let committer: GroupCommitter

    init(pool: PostgresPool, laneCount: Int = 4) {
        self.pool = pool
        catalog = CatalogStore()
        ledger = LedgerStore()
        bets = BetStore()
        queries = QueryStore(catalog: catalog)
        committer = GroupCommitter(
            pool: pool, engine: BetEngine(ledger: ledger, bets: bets), laneCount: laneCount)
    }

    /// The services the wallet serves: player methods, operator methods and the merge participant.
    func services() -> [any RPCService] {
        [
            WalletService(dependencies: self), WalletAdminService(dependencies: self),
            WalletMergeService(dependencies: self),
        ]
    }

    static func userID(_ text: String, field: String) throws(WalletError) -> RaveID {
        guard text.utf8.count == 32, let id = RaveID(text) else {
            throw .invalidArgument("\(field) must be 32 lowercase hex digits, got \"\(text)\"")
        }
        return id
    }
}

/// rave.wallet.v1.Wallet: the player's bets, balances, history and provably fair seeds.
struct WalletService: WalletV1.WalletHandler {
    let dependencies: WalletDependencies

    /// Most bets one PlaceBets call may carry.
    static let maximumBatchSize = 500

    func placeBet(
        _ request: WalletV1.PlaceBetRequest, context: RequestContext
    ) async throws -> WalletV1.PlaceBetResponse {
        let caller = try context.requireUser()
        guard let bet = request.bet else { throw WalletError.invalidArgument("bet is required") }
        let prepared = try await prepare(bet, caller: caller)
        guard let result = try await dependencies.committer.settle([prepared]).first else {
            throw RPCError.internalError("the bet produced no result")
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
        var results = [WalletV1.BetResult](repeating: WalletV1.BetResult(), count: request.bets.count)
        await withTaskGroup(of: [(Int, WalletV1.BetResult)].self) { group in
            for unit in units {
                group.addTask {
                    await self.settle(unit: unit, of: request.bets, caller: caller, requestID: context.requestID)
                }
            }
            for await settled in group {
                for (index, result) in settled { results[index] = result }
            }
        }
        return WalletV1.PlaceBetsResponse(results: results)
    }

    /// Settles one unit of a batch; an input error fails every bet of the unit without storing anything.
    private func settle(
        unit: [Int], of bets: [WalletV1.Bet], caller: Caller, requestID: String
    ) async -> [(Int, WalletV1.BetResult)] {
        do {
            var prepared: [PreparedBet] = []
            for index in unit { prepared.append(try await prepare(bets[index], caller: caller)) }
            return Array(zip(unit, try await dependencies.committer.settle(prepared)))
        } catch {
            let status = RPCError(mapping: error, requestID: requestID)
            return unit.map { index in
                var result = WalletV1.BetResult()
                result.betId = bets[index].betId
                result.status = .failed
                result.errorCode = status.code.rawValue
                result.errorMessage =
                    unit.count > 1 ? "chain \(bets[index].chainId) failed: \(status.message)" : status.message
                return (index, result)
            }
        }
    }

    private func prepare(_ bet: WalletV1.Bet, caller: Caller) async throws -> PreparedBet {
        let prepared = try await PreparedBet.prepare(
            bet, caller: caller, catalog: dependencies.catalog, database: dependencies.pool)
        if prepared.kind.movesMoney {
            // Created outside the bet's transaction so its cached id is committed.
            _ = try await dependencies.ledger.ensureAccount(prepared.houseAccount, on: dependencies.pool)
        }
        return prepared
    }
}
