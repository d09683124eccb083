import RavePostgres
import Synchronization

/// Which ledger account: a player's wallet or game credits, a game's house bank, or the outside world.
struct AccountKey: Hashable, Sendable {
    enum Kind: String, Sendable {
        case user, credit, house, external
    }

    var kind: Kind
    /// The nil UUID for house and external accounts.
    var userID: RaveID
    /// "" for wallets and external accounts; the game for credits and house banks.
    var gameID: String
    var currency: String
    var economy: Int32

    static let noUser = RaveID(high: 0, low: 0)

    static func house(game: String, currency: String, economy: Int32) -> AccountKey {
        AccountKey(kind: .house, userID: noUser, gameID: game, currency: currency, economy: economy)
    }

    static func external(currency: String, economy: Int32) -> AccountKey {
        AccountKey(kind: .external, userID: noUser, gameID: "", currency: currency, economy: economy)
    }

    /// Player accounts keep a running balance that may not go below zero; the others keep none.
    var holdsBalance: Bool { kind == .user || kind == .credit }
}

/// The double-entry ledger: accounts and transfers.
///
/// A transfer is one row carrying both sides of a movement: -amount on `from_account`, +amount on `to_account`,
/// so every transfer, and so the whole ledger, sums to zero by construction. One statement moves the two
/// balances and writes the row, so a transfer can never be half-written. The
/// `player_balance_not_negative` constraint makes an overdraft fail in the database, whatever Swift believed.
final class LedgerStore: Sendable {
    /// Account ids never change once committed, so they are cached after `ensureAccount` committed them.
    let accountIDs: Mutex<[AccountKey: Int64]>

    init() {
        accountIDs = Mutex([:])
    }

    static let ensureAccountStatement = PostgresStatement(
        name: "wallet_ensure_account",
        sql: """
            WITH created AS (
                INSERT INTO accounts (kind, user_id, game_id, currency, economy, balance)
                VALUES ($1, $2, $3, $4, $5, CASE WHEN $1 IN ('user', 'credit') THEN 0 END)
                ON CONFLICT (user_id, kind, game_id, currency, economy) DO NOTHING
                RETURNING account_id)
            SELECT account_id FROM created
            UNION ALL
            SELECT account_id FROM accounts
            WHERE kind = $1 AND user_id = $2 AND game_id = $3 AND currency = $4 AND economy = $5
            """)

    static let findAccountStatement = PostgresStatement(
        name: "wallet_find_account",
        sql: """
            SELECT account_id FROM accounts
            WHERE kind = $1 AND user_id = $2 AND game_id = $3 AND currency = $4 AND economy = $5
            """)

    /// Locks a player account's row as a transfer's update of it would, and reads its balance.
    static let lockBalanceStatement = PostgresStatement(
        name: "wallet_lock_balance",
        sql: "SELECT balance FROM accounts WHERE account_id = $1 AND balance IS NOT NULL FOR NO KEY UPDATE")

    /// Both balances move and the transfer row (both sides of the movement) is written in one statement; house
    /// and external accounts have a NULL balance, which the updates skip and the row keeps as NULL.
    static let transferStatement = PostgresStatement(
        name: "wallet_transfer",
        sql: """
            WITH debited AS (
                UPDATE accounts SET balance = balance - $4 WHERE account_id = $2 AND balance IS NOT NULL
                RETURNING balance),
            credited AS (
                UPDATE accounts SET balance = balance + $4 WHERE account_id = $3 AND balance IS NOT NULL
                RETURNING balance)
            INSERT INTO transfers (code, from_account, to_account, amount, from_balance_after, to_balance_after,
                user_id, bet_id, reference)
            VALUES ($1, $2, $3, $4, (SELECT balance FROM debited), (SELECT balance FROM credited), $5, $6, $7)
            RETURNING from_balance_after, to_balance_after
            """)

    /// The account's id, creating it if needed; runs in its own statement outside any bet transaction, so the
    /// id it caches is committed.
    func ensureAccount(_ key: AccountKey, on database: some PostgresQueryable) async throws -> Int64 {
        if let id = accountIDs.withLock({ $0[key] }) { return id }
        for _ in 0..<3 {
            let rows = try await database.execute(Self.ensureAccountStatement, parameters(key))
            if let row = rows.first {
                let id = try row.decode(Int64.self, at: 0)
                accountIDs.withLock { $0[key] = id }
                return id
            }
            // A concurrent insert committed after this statement's snapshot: the next statement sees it.
        }
        throw PostgresError(.client, "account \(key) could not be created or found")
    }

    /// Drops the cached account ids of `users`: after an erasure their accounts name other ids.
    func forgetAccounts(of users: Set<RaveID>) {
        accountIDs.withLock { cached in
            cached = cached.filter { !users.contains($0.key.userID) }
        }
    }

    /// The id of an existing account, or nil.
    func findAccount(_ key: AccountKey, on database: some PostgresQueryable) async throws -> Int64? {
        if let id = accountIDs.withLock({ $0[key] }) { return id }
        let rows = try await database.execute(Self.findAccountStatement, parameters(key))
        return try rows.first?.decode(Int64.self, at: 0)
    }

    /// The balance of player account `id`, whose row stays locked until the transaction ends.
    func lockBalance(of id: Int64, on database: some PostgresQueryable) async throws -> Int64 {
        guard let row = try await database.execute(Self.lockBalanceStatement, [id]).first else {
            throw PostgresError(.client, "player account \(id) has no balance to lock")
        }
        return try row.decode(Int64.self, at: 0)
    }

    /// Moves `amount` (> 0) from one account to another.
    ///
    /// Returns the player balances after (nil for house and external accounts). Throws `insufficientFunds` when the
    /// debit would take a player balance below zero.
    @discardableResult
    func transfer(
        code: String, from debit: Int64, to credit: Int64, amount: Int64, userID: RaveID?, betID: RaveID?,
        reference: String = "", on database: some PostgresQueryable
    ) async throws -> (debitBalance: Int64?, creditBalance: Int64?) {
        precondition(amount > 0, "transfers move a positive amount")
        let rows: PostgresRows
        do {
            rows = try await database.execute(
                Self.transferStatement, [code, debit, credit, amount, userID, betID, reference])
        } catch let error as PostgresError where error.constraint == "player_balance_not_negative" {
            throw WalletError(.insufficientFunds, "insufficient funds")
        }
        guard let row = rows.first else { throw PostgresError(.client, "a transfer returned no row") }
        return (try row.decode(Int64?.self, at: 0), try row.decode(Int64?.self, at: 1))
    }

    private func parameters(_ key: AccountKey) -> [(any PostgresEncodable)?] {
        [key.kind.rawValue, key.userID, key.gameID, key.currency, key.economy]
    }
}
