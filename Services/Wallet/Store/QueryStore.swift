import RaveMessages
import RavePostgres

/// Read-only views of a user's money: balances and ledger history.
struct QueryStore: Sendable {
    static let selectBalances = PostgresStatement(
        name: "wallet_select_balances",
        sql: """
            SELECT game_id, currency, economy, balance FROM accounts
            WHERE user_id = $1 AND kind IN ('user', 'credit') AND ($2 = '' OR game_id IN ('', $2))
            ORDER BY currency, economy, game_id
            """)
    /// A user's history: the transfers on either side of the user's accounts, newest first.
    ///
    /// Each side is an entry, keyed transfer_id × 2 for the side money leaves and transfer_id × 2 + 1 for the
    /// side it arrives, so keys order entries like transfers and a transfer between two accounts of one user is
    /// two distinct entries. Keyset paging on that key (newest first): stable under concurrent inserts, no OFFSET
    /// scans. For each of the user's few accounts, two backward index scans (one per side) each stop after `limit`
    /// rows; the merge keeps the newest `limit`.
    static let selectEntries = PostgresStatement(
        name: "wallet_select_entries",
        sql: """
            WITH mine AS (
                SELECT account_id, currency, economy, game_id FROM accounts
                WHERE user_id = $1 AND kind IN ('user', 'credit') AND ($2 = '' OR currency = $2)
                    AND ($3::int4 = 0 OR economy = $3::int4))
            SELECT e.entry_key, e.transfer_id, e.code, e.amount, e.balance_after, m.currency, m.economy, m.game_id,
                e.bet_id, e.created_at
            FROM mine m CROSS JOIN LATERAL (
                (SELECT t.transfer_id * 2 AS entry_key, t.transfer_id, t.code, -t.amount AS amount,
                    t.from_balance_after AS balance_after, t.bet_id, t.created_at
                FROM transfers t
                WHERE t.from_account = m.account_id AND t.transfer_id < $4::int8 / 2 + $4::int8 % 2
                ORDER BY t.transfer_id DESC LIMIT $5::int8)
                UNION ALL
                (SELECT t.transfer_id * 2 + 1, t.transfer_id, t.code, t.amount, t.to_balance_after, t.bet_id,
                    t.created_at
                FROM transfers t
                WHERE t.to_account = m.account_id AND t.transfer_id < $4::int8 / 2
                ORDER BY t.transfer_id DESC LIMIT $5::int8)) e
            ORDER BY e.entry_key DESC
            LIMIT $5::int8
            """)

    let catalog: CatalogStore

    func balances(user: RaveID, game: String, on database: some PostgresQueryable) async throws -> [WalletV1.Balance] {
        var balances: [WalletV1.Balance] = []
        for row in try await database.execute(Self.selectBalances, [user, game]) {
            let currency = try await catalog.currency(try row.decode(String.self, at: 1), on: database)
            balances.append(
                WalletV1.Balance(
                    currency: currency.code, economy: WalletV1.Economy(rawValue: try row.decode(Int32.self, at: 2)),
                    gameId: try row.decode(String.self, at: 0),
                    amount: MoneyFormat.format(try row.decode(Int64.self, at: 3), currency: currency)))
        }
        return balances
    }

    func entries(
        user: RaveID, currency: String, economy: Int32, before: Int64, limit: Int, on database: some PostgresQueryable
    ) async throws -> (entries: [WalletV1.LedgerEntry], last: Int64?) {
        var entries: [WalletV1.LedgerEntry] = []
        var last: Int64?
        let rows = try await database.execute(Self.selectEntries, [user, currency, economy, before, limit])
        for row in rows {
            let currency = try await catalog.currency(try row.decode(String.self, at: 5), on: database)
            var entry = WalletV1.LedgerEntry()
            last = try row.decode(Int64.self, at: 0)
            entry.transferId = String(try row.decode(Int64.self, at: 1))
            entry.code = try row.decode(String.self, at: 2)
            entry.amount = MoneyFormat.format(try row.decode(Int64.self, at: 3), currency: currency)
            entry.balanceAfter = MoneyFormat.format(try row.decode(Int64?.self, at: 4) ?? 0, currency: currency)
            entry.currency = currency.code
            entry.economy = WalletV1.Economy(rawValue: try row.decode(Int32.self, at: 6))
            entry.gameId = try row.decode(String.self, at: 7)
            entry.betId = try row.decode(RaveID?.self, at: 8)?.hex ?? ""
            entry.createdAtUnixMicros = try row.decode(PostgresTimestamp.self, at: 9).microsecondsSinceEpoch
            entries.append(entry)
        }
        return (entries, rows.count == limit ? last : nil)
    }
}
