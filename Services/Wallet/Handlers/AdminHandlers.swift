import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime

/// rave.wallet.v1.WalletAdmin: currencies, games, eligibility and operator money movements.
struct AdminHandlers: WalletV1.WalletAdminHandler {
    let dependencies: WalletDependencies

    func createCurrency(
        _ request: WalletV1.CreateCurrencyRequest, context: RequestContext
    ) async throws -> WalletV1.CreateCurrencyResponse {
        try dependencies.adminScope.requireAllPublishers(context, what: "currencies")
        guard Currency.isValidCode(request.code) else {
            throw WalletError.invalidArgument("code must be 2…12 upper-case letters or digits, got \"\(request.code)\"")
        }
        let decimals = try RequestLimits.currencyDecimals.check(request.decimals, orThrow: WalletError.invalidArgument)
        try await dependencies.catalog.createCurrency(
            Currency(code: request.code, decimals: decimals), on: dependencies.pool)
        return WalletV1.CreateCurrencyResponse()
    }

    func createGame(
        _ request: WalletV1.CreateGameRequest, context: RequestContext
    ) async throws -> WalletV1.CreateGameResponse {
        try dependencies.adminScope.requireAllPublishers(context, what: "games")
        guard var game = request.game, (1...64).contains(game.gameId.utf8.count) else {
            throw WalletError.invalidArgument("game with a game_id of 1…64 bytes is required")
        }
        game.returnToPlayer = ""
        return WalletV1.CreateGameResponse(game: try await dependencies.catalog.createGame(game, on: dependencies.pool))
    }

    func setEligibility(
        _ request: WalletV1.SetEligibilityRequest, context: RequestContext
    ) async throws -> WalletV1.SetEligibilityResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        _ = try WalletDependencies.userID(request.appId, field: "app_id")
        for country in request.realMoneyCountries
        where country.utf8.count != 2 || !country.utf8.allSatisfy({ (65...90).contains($0) }) {
            throw WalletError.invalidArgument("countries are ISO 3166-1 alpha-2 codes like \"GB\", got \"\(country)\"")
        }
        try await dependencies.catalog.setRealMoneyCountries(
            app: request.appId, countries: request.realMoneyCountries, on: dependencies.pool)
        return WalletV1.SetEligibilityResponse()
    }

    func deposit(
        _ request: WalletV1.DepositRequest, context: RequestContext
    ) async throws -> WalletV1.OperatorTransferResponse {
        _ = try context.requireAdminCaller()
        return try await move(request.transfer, kind: "deposit", sign: 1)
    }

    func withdraw(
        _ request: WalletV1.WithdrawRequest, context: RequestContext
    ) async throws -> WalletV1.OperatorTransferResponse {
        _ = try context.requireAdminCaller()
        return try await move(request.transfer, kind: "withdrawal", sign: -1)
    }

    func adjust(
        _ request: WalletV1.AdjustRequest, context: RequestContext
    ) async throws -> WalletV1.OperatorTransferResponse {
        _ = try context.requireAdminCaller()
        return try await move(request.transfer, kind: "adjustment", sign: 0)
    }

    func getUserWallet(
        _ request: WalletV1.GetUserWalletRequest, context: RequestContext
    ) async throws -> WalletV1.GetWalletResponse {
        _ = try context.requireAdminCaller()
        let user = try await dependencies.playerID(request.userId, field: "user_id")
        return WalletV1.GetWalletResponse(
            balances: try await dependencies.queries.balances(user: user, game: "", on: dependencies.pool))
    }

    /// Moves money between the outside world and a player, once per operation id.
    ///
    /// `sign` 1 deposits, -1 withdraws, 0 adjusts by the sign of the amount. The player must be a user identity
    /// knows (NOT_FOUND otherwise) and not a merged source (FAILED_PRECONDITION naming the target): money on an
    /// account no player can reach is money lost. A replay of a recorded operation is answered first, whatever
    /// became of the user since.
    private func move(
        _ transfer: WalletV1.OperatorTransfer?, kind: String, sign: Int
    ) async throws -> WalletV1.OperatorTransferResponse {
        guard let transfer, (1...128).contains(transfer.operationId.utf8.count) else {
            throw WalletError.invalidArgument("transfer with an operation_id of 1…128 bytes is required")
        }
        let user = try await dependencies.playerID(transfer.userId, field: "user_id")
        guard transfer.economy == .real || transfer.economy == .sandbox else {
            throw WalletError.invalidArgument("economy must be ECONOMY_REAL or ECONOMY_SANDBOX")
        }
        let currency = try await dependencies.catalog.currency(transfer.currency, on: dependencies.pool)
        let amount = try MoneyFormat.parse(transfer.amount, currency: currency, allowNegative: sign == 0)
        guard amount != 0, sign == 0 || amount > 0 else {
            throw WalletError.invalidArgument("amount must be greater than 0, got \"\(transfer.amount)\"")
        }
        if !transfer.gameId.isEmpty { _ = try await dependencies.catalog.game(transfer.gameId, on: dependencies.pool) }
        let hash = Hex.encode(
            Digest.sha256(
                "\(kind)|\(transfer.userId)|\(currency.code)|\(transfer.economy.rawValue)|\(amount)|\(transfer.gameId)")
        )
        if let replay = try await storedOperation(transfer.operationId, hash: hash) { return replay }
        switch try await dependencies.users.standing(of: user) {
        case .active: break
        case .unknown: throw WalletError.notFound("no user \(user.hex): operator transfers need an existing user")
        case .mergedInto(let target):
            throw WalletError(
                .failedPrecondition, "user \(user.hex) was merged into \(target.hex); move the money to that user")
        }

        let ledger = dependencies.ledger
        let operations = dependencies.operations
        let playerKey = AccountKey(
            kind: transfer.gameId.isEmpty ? .user : .credit, userID: user, gameID: transfer.gameId,
            currency: currency.code, economy: transfer.economy.rawValue)
        let player = try await ledger.ensureAccount(playerKey, on: dependencies.pool)
        let external = try await ledger.ensureAccount(
            .external(currency: currency.code, economy: transfer.economy.rawValue), on: dependencies.pool)
        let incoming = sign == 1 || (sign == 0 && amount > 0)
        do {
            return try await dependencies.pool.transaction { transaction in
                let balances = try await ledger.transfer(
                    code: kind, from: incoming ? external : player, to: incoming ? player : external,
                    amount: amount.magnitude == 0 ? 0 : Int64(amount.magnitude), userID: user, betID: nil,
                    reference: String(transfer.reason.prefix(200)), on: transaction)
                let balance = (incoming ? balances.creditBalance : balances.debitBalance) ?? 0
                let response = WalletV1.OperatorTransferResponse(
                    transferId: transfer.operationId, balance: MoneyFormat.format(balance, currency: currency))
                try await operations.record(
                    transfer.operationId, kind: kind, requestHash: hash, result: response.protobufBytes(),
                    in: transaction)
                return response
            }
        } catch let error as PostgresError where error.sqlState == "23505" {
            // The same operation id committed concurrently: answer as a replay.
            if let replay = try await storedOperation(transfer.operationId, hash: hash) { return replay }
            throw error
        }
    }

    private func storedOperation(_ id: String, hash: String) async throws -> WalletV1.OperatorTransferResponse? {
        guard let stored = try await dependencies.operations.operation(id, on: dependencies.pool) else { return nil }
        guard stored.requestHash == hash else {
            throw WalletError(.conflictingReplay, "operation id \(id) was already used for a different request")
        }
        return try stored.result.withUnsafeBytes {
            try WalletV1.OperatorTransferResponse(protobufBytes: $0)
        }
    }
}
