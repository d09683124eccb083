import RaveMessages
import RavePostgres
import RaveRPC

/// The operator reads of rave.wallet.v1.WalletAdmin: the catalog's lists, an application's real-money countries and
/// a player's ledger.
extension AdminHandlers {
    /// What SetEligibility last set, within the operator's publisher scope as SetEligibility is.
    func getEligibility(
        _ request: WalletV1.GetEligibilityRequest, context: RequestContext
    ) async throws -> WalletV1.GetEligibilityResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        _ = try WalletDependencies.userID(request.appId, field: "app_id")
        return WalletV1.GetEligibilityResponse(
            realMoneyCountries: try await dependencies.catalog.realMoneyCountries(
                app: request.appId, on: dependencies.pool))
    }

    func listCurrencies(
        _ request: WalletV1.ListCurrenciesRequest, context: RequestContext
    ) async throws -> WalletV1.ListCurrenciesResponse {
        _ = try context.requireAdminCaller()
        let currencies = try await dependencies.catalog.allCurrencies(on: dependencies.pool)
        return WalletV1.ListCurrenciesResponse(
            currencies: currencies.map { WalletV1.CurrencyDefinition(code: $0.code, decimals: Int32($0.decimals)) })
    }

    /// Every game as stored: its definition with the return to player computed when it was created.
    func listGames(
        _ request: WalletV1.ListGamesRequest, context: RequestContext
    ) async throws -> WalletV1.ListGamesResponse {
        _ = try context.requireAdminCaller()
        return WalletV1.ListGamesResponse(games: try await dependencies.catalog.allGames(on: dependencies.pool))
    }

    func listUserTransactions(
        _ request: WalletV1.ListUserTransactionsRequest, context: RequestContext
    ) async throws -> WalletV1.ListTransactionsResponse {
        _ = try context.requireAdminCaller()
        let user = try await dependencies.playerID(request.userId, field: "user_id")
        return try await dependencies.ledgerPage(
            of: user, currency: request.currency, economy: request.economy, pageSize: request.pageSize,
            pageToken: request.pageToken)
    }
}

extension WalletDependencies {
    /// A page of a player's ledger entries, newest first: the player's own ListTransactions and the operators'
    /// ListUserTransactions read the same page.
    func ledgerPage(
        of user: RaveID, currency: String, economy: WalletV1.Economy, pageSize: Int32, pageToken: String
    ) async throws -> WalletV1.ListTransactionsResponse {
        let size = try RequestLimits.transactionPageSizes.check(pageSize, orThrow: WalletError.invalidArgument)
        var before = Int64.max
        if !pageToken.isEmpty {
            guard let token = Int64(pageToken), token > 0 else {
                throw WalletError.invalidArgument("page_token is not one this method returned")
            }
            before = token
        }
        let page = try await queries.entries(
            user: user, currency: currency, economy: economy.rawValue, before: before, limit: size, on: pool)
        return WalletV1.ListTransactionsResponse(entries: page.entries, nextPageToken: page.last.map(String.init) ?? "")
    }
}
