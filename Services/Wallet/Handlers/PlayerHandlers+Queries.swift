import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC

extension PlayerHandlers {
    func getWallet(
        _ request: WalletV1.GetWalletRequest, context: RequestContext
    ) async throws -> WalletV1.GetWalletResponse {
        let user = try await dependencies.playerID(of: try context.requireUser())
        return WalletV1.GetWalletResponse(
            balances: try await dependencies.queries.balances(user: user, game: request.gameId, on: dependencies.pool))
    }

    func getAccount(
        _ request: WalletV1.GetAccountRequest, context: RequestContext
    ) async throws -> WalletV1.GetAccountResponse {
        let caller = try context.requireUser()
        let user = try await dependencies.playerID(of: caller)
        var response = WalletV1.GetAccountResponse()
        response.userId = user.hex
        response.authenticated = caller.scopes.contains(PreparedBet.authenticatedScope)
        let countryAllowed = try await dependencies.catalog.allowsRealMoney(
            app: caller.appID, country: request.country, on: dependencies.pool)
        response.realMoneyAllowed =
            countryAllowed && response.authenticated && !caller.scopes.contains(PreparedBet.unbackedOnlyScope)
        response.balances = try await dependencies.queries.balances(user: user, game: "", on: dependencies.pool)
        return response
    }

    func listTransactions(
        _ request: WalletV1.ListTransactionsRequest, context: RequestContext
    ) async throws -> WalletV1.ListTransactionsResponse {
        let user = try await dependencies.playerID(of: try context.requireUser())
        return try await dependencies.ledgerPage(
            of: user, currency: request.currency, economy: request.economy, pageSize: request.pageSize,
            pageToken: request.pageToken)
    }

    func listGames(
        _ request: WalletV1.ListGamesRequest, context: RequestContext
    ) async throws -> WalletV1.ListGamesResponse {
        _ = try context.requireCaller()
        return WalletV1.ListGamesResponse(games: try await dependencies.catalog.allGames(on: dependencies.pool))
    }

    func getServerSeed(
        _ request: WalletV1.GetServerSeedRequest, context: RequestContext
    ) async throws -> WalletV1.GetServerSeedResponse {
        let user = try await dependencies.playerID(of: try context.requireUser())
        let seed = try await dependencies.bets.activeSeed(user: user, on: dependencies.pool)
        return WalletV1.GetServerSeedResponse(serverSeedHash: seed.hash, nextNonce: seed.nonce)
    }

    func rotateServerSeed(
        _ request: WalletV1.RotateServerSeedRequest, context: RequestContext
    ) async throws -> WalletV1.RotateServerSeedResponse {
        let user = try await dependencies.playerID(of: try context.requireUser())
        let rotated = try await dependencies.bets.rotateSeed(user: user, on: dependencies.pool)
        return WalletV1.RotateServerSeedResponse(revealed: rotated.revealed, nextServerSeedHash: rotated.next)
    }

    func verifyBet(
        _ request: WalletV1.VerifyBetRequest, context: RequestContext
    ) async throws -> WalletV1.VerifyBetResponse {
        let user = try await dependencies.playerID(of: try context.requireUser())
        let betID = try WalletDependencies.userID(request.betId, field: "bet_id")
        guard let bet = try await dependencies.bets.settledBet(user: user, betID: betID, on: dependencies.pool) else {
            throw WalletError.notFound("no settled bet \(request.betId) of the caller")
        }
        let stored = try bet.result.withUnsafeBytes { try WalletV1.BetResult(protobufBytes: $0) }
        var response = WalletV1.VerifyBetResponse()
        response.clientSeed = bet.clientSeed
        response.nonce = bet.nonce
        response.revealed = bet.revealed
        guard response.revealed else { return response }
        let seed = bet.seed
        response.seed = WalletV1.RevealedSeed(serverSeed: Hex.encode(seed), serverSeedHash: bet.seedHash)
        let game = try await dependencies.catalog.game(bet.gameID, on: dependencies.pool)
        let currency = try await dependencies.catalog.currency(bet.currency, on: dependencies.pool)
        let lines = (stored.outcome?.paylines ?? []).map { Int($0.payline) }
        var random = FairRandom(serverSeed: seed, clientSeed: response.clientSeed, nonce: response.nonce)
        let play = try game.math.play(wager: bet.wager, lines: lines, random: &random)
        response.outcome = GameMath.outcome(play, currency: currency)
        response.matches =
            response.outcome == stored.outcome && Hex.encode(Digest.sha256(seed)) == response.seed?.serverSeedHash
        return response
    }
}
