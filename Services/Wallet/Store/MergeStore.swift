import RaveMessages
import RavePostgres

/// Merges applied here, and what a merge moves besides money: the source's accounts to transfer, bets and seeds.
struct MergeStore: Sendable {
    static let recordMerge = PostgresStatement(
        name: "wallet_record_merge",
        sql: """
            INSERT INTO merges (merge_id, source_user_id, target_user_id) VALUES ($1, $2, $3)
            ON CONFLICT (merge_id) DO NOTHING RETURNING merge_id
            """)
    static let sourceAccounts = PostgresStatement(
        name: "wallet_merge_source_accounts",
        sql: """
            SELECT account_id, kind, game_id, currency, economy, balance FROM accounts
            WHERE user_id = $1 AND kind IN ('user', 'credit') ORDER BY account_id FOR UPDATE
            """)
    /// The same query without its FOR UPDATE, for a lock-free read ahead of the transaction.
    static let sourceAccountsUnlocked = PostgresStatement(
        name: "wallet_merge_source_accounts_unlocked",
        sql: """
            SELECT account_id, kind, game_id, currency, economy, balance FROM accounts
            WHERE user_id = $1 AND kind IN ('user', 'credit') ORDER BY account_id
            """)
    /// The source's bets become the target's, so a bet id replayed under either id returns its stored result
    /// (ids the target used too stay with the source: a bet id names one bet per player).
    static let moveBets = PostgresStatement(
        name: "wallet_merge_bets",
        sql: """
            UPDATE bets b SET user_id = $2 WHERE b.user_id = $1
                AND NOT EXISTS (SELECT 1 FROM bets t WHERE t.user_id = $2 AND t.bet_id = b.bet_id)
            """)
    /// The source's seeds go with its bets; its active seed is revealed (it can never draw again), so every bet
    /// it drew for can be verified.
    static let moveSeeds = PostgresStatement(
        name: "wallet_merge_seeds",
        sql: "UPDATE server_seeds SET user_id = $2, revealed_at = COALESCE(revealed_at, now()) WHERE user_id = $1")
    /// The merge a sweep belongs to, for the transfers' reference.
    static let mergeOfSource = PostgresStatement(
        name: "wallet_merge_of_source", sql: "SELECT merge_id FROM merged_users WHERE source_id = $1")

    /// One of the source's wallets or credits: its id, its balance, and the same account of the target.
    struct SourceAccount: Sendable {
        var accountID: Int64
        var balance: Int64
        var targetKey: AccountKey
    }

    /// Records the merge; false when this merge id was recorded before (the merge is applied already).
    func record(
        mergeID: String, source: RaveID, target: RaveID, in transaction: PostgresTransaction
    ) async throws -> Bool {
        !(try await transaction.execute(Self.recordMerge, [mergeID, source, target])).isEmpty
    }

    /// The merge that made `source` someone else, "" when none is recorded.
    func mergeID(ofSource source: RaveID, in transaction: PostgresTransaction) async throws -> String {
        try await transaction.execute(Self.mergeOfSource, [source]).first?.decode(String.self, at: 0) ?? ""
    }

    /// The source's wallets and credits with the target's matching keys; `locked` takes their row locks (inside
    /// the merge's transaction), without it they are only read.
    func accounts(
        of source: RaveID, target: RaveID, locked: Bool, on database: some PostgresQueryable
    ) async throws -> [SourceAccount] {
        try await database.execute(locked ? Self.sourceAccounts : Self.sourceAccountsUnlocked, [source]).map { row in
            SourceAccount(
                accountID: try row.decode(Int64.self, at: 0), balance: try row.decode(Int64.self, at: 5),
                targetKey: AccountKey(
                    kind: try row.decode(String.self, at: 1) == "credit" ? .credit : .user, userID: target,
                    gameID: try row.decode(String.self, at: 2), currency: try row.decode(String.self, at: 3),
                    economy: try row.decode(Int32.self, at: 4)))
        }
    }

    /// Gives the target the source's bets and seeds.
    func moveBetsAndSeeds(of source: RaveID, to target: RaveID, in transaction: PostgresTransaction) async throws {
        try await transaction.execute(Self.moveBets, [source, target])
        try await transaction.execute(Self.moveSeeds, [source, target])
    }
}
