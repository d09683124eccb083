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
    /// Keyset paging on the entry id (newest first): stable under concurrent inserts, no OFFSET scans.
    static let selectEntries = PostgresStatement(
        name: "wallet_select_entries",
        sql: """
            SELECT e.entry_id, e.transfer_id, t.code, e.amount, e.balance_after, a.currency, a.economy, a.game_id,
                t.bet_id, e.created_at
            FROM ledger_entries e
            JOIN accounts a ON a.account_id = e.account_id
            JOIN transfers t ON t.transfer_id = e.transfer_id
            WHERE a.user_id = $1 AND a.kind IN ('user', 'credit') AND ($2 = '' OR a.currency = $2)
                AND ($3 = 0 OR a.economy = $3) AND e.entry_id < $4
            ORDER BY e.entry_id DESC
            LIMIT $5
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
            entry.transferId = try row.decode(RaveID.self, at: 1).hex
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
