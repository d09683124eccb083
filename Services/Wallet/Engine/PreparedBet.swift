import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC

/// A bet whose input has been checked: known game and currency, a valid wager and lines, an allowed caller.
///
/// What remains can only fail on money (insufficient funds or credits).
struct PreparedBet: Sendable {
    enum Kind: String, Sendable {
        case backed, unbacked, credit
        case unbackedCredit = "unbacked_credit"

        var movesMoney: Bool { self == .backed || self == .credit }
    }

    var userID: RaveID
    var betID: RaveID
    var betIDText: String
    var gameID: String
    var math: GameMath
    var currency: Currency
    var economy: WalletV1.Economy
    var wager: Int64
    var lines: [Int]
    var clientSeed: String
    var kind: Kind
    var creditGameID: String
    var chainID: String
    /// SHA-256 of the fields that define the bet, to tell a replay from a different bet with the same id.
    var requestHash: [UInt8]

    /// The account the wager comes from and the payout goes to.
    var playerAccount: AccountKey {
        kind == .credit
            ? AccountKey(
                kind: .credit, userID: userID, gameID: creditGameID, currency: currency.code, economy: economy.rawValue)
            : AccountKey(kind: .user, userID: userID, gameID: "", currency: currency.code, economy: economy.rawValue)
    }

    var houseAccount: AccountKey { .house(game: gameID, currency: currency.code, economy: economy.rawValue) }

    /// The caller's scope that restricts a token to unbacked play (the seed SDK's unbacked token).
    static let unbackedOnlyScope = "wallet:unbacked"
    /// The scope of a token issued to an authenticated (not anonymous) account.
    static let authenticatedScope = Caller.authenticatedScope

    /// Checks everything about `bet` that needs no money, reading games and currencies through `catalog`.
    ///
    /// `callerID` is the caller's user id when already parsed (a batch parses it once, not per bet).
    static func prepare(
        _ bet: WalletV1.Bet, caller: Caller, callerID: RaveID? = nil, catalog: CatalogStore,
        database: some PostgresQueryable
    ) async throws -> PreparedBet {
        guard let userID = callerID ?? RaveID(wire: caller.userID) else {
            throw WalletError(.unauthenticated, "the caller has no user id")
        }
        let betID = try WalletDependencies.userID(bet.betId, field: "bet_id")
        guard bet.economy == .real || bet.economy == .sandbox else {
            throw WalletError.invalidArgument("economy must be ECONOMY_REAL or ECONOMY_SANDBOX")
        }
        guard bet.clientSeed.utf8.count <= 64 else {
            throw WalletError.invalidArgument("client_seed is at most 64 bytes")
        }
        let game = try await catalog.game(bet.gameId, on: database)
        let currency = try await catalog.currency(bet.currency, on: database)
        let wager = try MoneyFormat.parsePositive(bet.wager, currency: currency, field: "wager")
        let lines = try game.math.lines(bet.paylines)
        let isCredit = !bet.creditGameId.isEmpty
        if isCredit { _ = try await catalog.game(bet.creditGameId, on: database) }
        let kind: Kind =
            switch (bet.unbacked, isCredit) {
            case (false, false): .backed
            case (true, false): .unbacked
            case (false, true): .credit
            case (true, true): .unbackedCredit
            }
        if kind.movesMoney {
            guard !caller.scopes.contains(unbackedOnlyScope) else {
                throw WalletError(.permissionDenied, "this token allows unbacked bets only")
            }
            if bet.economy == .real {
                guard caller.scopes.contains(authenticatedScope) else {
                    throw WalletError(.permissionDenied, "real-money bets need an authenticated account")
                }
                guard try await catalog.allowsRealMoney(app: caller.appID, country: bet.country, on: database) else {
                    throw WalletError(
                        .permissionDenied, "real-money play is not allowed for this app in country \"\(bet.country)\"")
                }
            }
        }
        let canonical = canonicalRequest(
            gameID: bet.gameId, wager: wager, currency: currency.code, economy: bet.economy.rawValue, lines: lines,
            clientSeed: bet.clientSeed, kind: kind, creditGameID: bet.creditGameId)
        return PreparedBet(
            userID: userID, betID: betID, betIDText: bet.betId, gameID: bet.gameId, math: game.math,
            currency: currency, economy: bet.economy, wager: wager, lines: lines, clientSeed: bet.clientSeed,
            kind: kind, creditGameID: bet.creditGameId, chainID: bet.chainId,
            requestHash: Digest.sha256(canonical))
    }

    /// What a bet's request hash is taken of: its fields joined by U+001F, the lines by ",".
    ///
    /// Written byte by byte into one buffer (a bet used to build and join an array of strings here, which showed in
    /// profiles); the bytes must never change, or stored bets would stop matching their replays.
    static func canonicalRequest(
        gameID: String, wager: Int64, currency: String, economy: Int32, lines: [Int], clientSeed: String, kind: Kind,
        creditGameID: String
    ) -> [UInt8] {
        let separator: UInt8 = 0x1F
        var bytes: [UInt8] = []
        bytes.reserveCapacity(
            64 + gameID.utf8.count + clientSeed.utf8.count + creditGameID.utf8.count + lines.count * 3)
        bytes.append(contentsOf: gameID.utf8)
        bytes.append(separator)
        bytes.append(contentsOf: String(wager).utf8)
        bytes.append(separator)
        bytes.append(contentsOf: currency.utf8)
        bytes.append(separator)
        bytes.append(contentsOf: String(economy).utf8)
        bytes.append(separator)
        for (index, line) in lines.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: String(line).utf8)
        }
        bytes.append(separator)
        bytes.append(contentsOf: clientSeed.utf8)
        bytes.append(separator)
        bytes.append(contentsOf: kind.rawValue.utf8)
        bytes.append(separator)
        bytes.append(contentsOf: creditGameID.utf8)
        return bytes
    }
}
