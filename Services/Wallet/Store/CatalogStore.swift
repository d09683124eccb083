import RaveMessages
import RavePostgres
import Synchronization

/// Currencies, games and real-money eligibility: written by operators, read by every bet (and so cached).
///
/// Currencies and games are immutable once created, so a cached entry never goes stale. Eligibility lists can
/// change: an answer is reused for at most `eligibilityLifetime` (every real-money bet asks), and this process
/// forgets its answers when it changes a list itself.
final class CatalogStore: Sendable {
    /// A game as bets use it: its validated math and its definition.
    struct GameEntry: Sendable {
        var definition: WalletV1.Game
        var math: GameMath
    }

    private let currencies = Mutex<[String: Currency]>([:])
    private let games = Mutex<[String: GameEntry]>([:])
    private let eligibility = Mutex<[String: (allowed: Bool, checked: ContinuousClock.Instant)]>([:])

    /// How long a real-money eligibility answer is reused; a list changed by another process applies after this.
    static let eligibilityLifetime: Duration = .seconds(1)

    static let insertCurrency = PostgresStatement(
        name: "wallet_insert_currency",
        sql: """
            INSERT INTO currencies (code, decimals) VALUES ($1, $2)
            ON CONFLICT (code) DO NOTHING RETURNING code
            """)
    static let selectCurrency = PostgresStatement(
        name: "wallet_select_currency", sql: "SELECT decimals FROM currencies WHERE code = $1")
    static let insertGame = PostgresStatement(
        name: "wallet_insert_game",
        sql: """
            INSERT INTO games (game_id, kind, definition, return_to_player) VALUES ($1, $2, $3, $4)
            ON CONFLICT (game_id) DO NOTHING RETURNING game_id
            """)
    static let selectGame = PostgresStatement(
        name: "wallet_select_game", sql: "SELECT definition FROM games WHERE game_id = $1")
    static let selectGames = PostgresStatement(
        name: "wallet_select_games", sql: "SELECT definition FROM games ORDER BY game_id")
    static let selectCurrencies = PostgresStatement(
        name: "wallet_select_currencies", sql: "SELECT code, decimals FROM currencies ORDER BY code")
    static let selectCountries = PostgresStatement(
        name: "wallet_select_countries",
        sql: "SELECT country FROM real_money_countries WHERE app_id = $1 ORDER BY country")
    static let selectCountry = PostgresStatement(
        name: "wallet_select_country", sql: "SELECT 1 FROM real_money_countries WHERE app_id = $1 AND country = $2")

    /// Creates a currency; repeating the same definition is fine, a different one is ALREADY_EXISTS.
    func createCurrency(_ currency: Currency, on database: some PostgresQueryable) async throws {
        let rows = try await database.execute(Self.insertCurrency, [currency.code, currency.decimals])
        if rows.isEmpty {
            let existing = try await self.currency(currency.code, on: database)
            guard existing == currency else {
                throw WalletError(
                    .conflictingReplay, "currency \(currency.code) exists with \(existing.decimals) decimals")
            }
        }
    }

    /// Every currency, by code (for operators; bets use `currency(_:on:)` and its cache).
    func allCurrencies(on database: some PostgresQueryable) async throws -> [Currency] {
        try await database.execute(Self.selectCurrencies, []).map { row in
            Currency(code: try row.decode(String.self, at: 0), decimals: try row.decode(Int.self, at: 1))
        }
    }

    /// The currency, or NOT_FOUND.
    func currency(_ code: String, on database: some PostgresQueryable) async throws -> Currency {
        if let cached = currencies.withLock({ $0[code] }) { return cached }
        let rows = try await database.execute(Self.selectCurrency, [code])
        guard let row = rows.first else { throw WalletError.notFound("unknown currency \"\(code)\"") }
        let currency = Currency(code: code, decimals: try row.decode(Int.self, at: 0))
        currencies.withLock { $0[code] = currency }
        return currency
    }

    /// Stores a validated game with its return to player; the same definition again is fine.
    func createGame(_ game: WalletV1.Game, on database: some PostgresQueryable) async throws -> WalletV1.Game {
        let math = try GameMath(game)
        var stored = game
        stored.returnToPlayer = math.returnToPlayer().decimal()
        let rows = try await database.execute(
            Self.insertGame, [game.gameId, math.kind, stored.protobufBytes(), stored.returnToPlayer])
        if rows.isEmpty {
            let existing = try await self.game(game.gameId, on: database).definition
            guard existing == stored else {
                throw WalletError(.conflictingReplay, "game \(game.gameId) exists with a different definition")
            }
        }
        return stored
    }

    /// The game, or NOT_FOUND.
    func game(_ id: String, on database: some PostgresQueryable) async throws -> GameEntry {
        if let cached = games.withLock({ $0[id] }) { return cached }
        let rows = try await database.execute(Self.selectGame, [id])
        guard let row = rows.first else { throw WalletError.notFound("unknown game \"\(id)\"") }
        let entry = try Self.entry(try row.decode([UInt8].self, at: 0))
        games.withLock { $0[id] = entry }
        return entry
    }

    func allGames(on database: some PostgresQueryable) async throws -> [WalletV1.Game] {
        try await database.execute(Self.selectGames, []).map { row in
            try WalletV1.Game(protobufBytes: try row.decode([UInt8].self, at: 0))
        }
    }

    /// Replaces an application's real-money countries in one transaction.
    func setRealMoneyCountries(app: String, countries: [String], on pool: PostgresPool) async throws {
        try await pool.transaction { transaction in
            try await transaction.query("DELETE FROM real_money_countries WHERE app_id = $1", [app])
            if !countries.isEmpty {
                try await transaction.query(
                    "INSERT INTO real_money_countries (app_id, country) SELECT $1, unnest($2::text[])",
                    [app, countries])
            }
        }
        eligibility.withLock { $0.removeAll() }
    }

    /// The application's real-money countries, sorted (read from the table, never from the cache).
    func realMoneyCountries(app: String, on database: some PostgresQueryable) async throws -> [String] {
        try await database.execute(Self.selectCountries, [app]).map { try $0.decode(String.self, column: "country") }
    }

    func allowsRealMoney(app: String, country: String, on database: some PostgresQueryable) async throws -> Bool {
        let key = app + "\u{1F}" + country
        let now = ContinuousClock.now
        if let cached = eligibility.withLock({ $0[key] }), now - cached.checked < Self.eligibilityLifetime {
            return cached.allowed
        }
        let allowed = !(try await database.execute(Self.selectCountry, [app, country])).isEmpty
        eligibility.withLock { $0[key] = (allowed, now) }
        return allowed
    }

    private static func entry(_ bytes: [UInt8]) throws -> GameEntry {
        let definition = try WalletV1.Game(protobufBytes: bytes)
        return GameEntry(definition: definition, math: try GameMath(definition))
    }
}

extension WalletV1.Game {
    init(protobufBytes bytes: [UInt8]) throws {
        self = try bytes.withUnsafeBytes { raw in try WalletV1.Game(protobufBytes: raw) }
    }
}
