import RavePostgres
import RaveRPC

/// What an erasure does to the wallet's tables (docs/wallet.md, "Erasure"), in one transaction.
///
/// The ledger must keep summing to zero and its history must stay whole, so money rows are kept and only the ids
/// they carry change: each erased id is replaced by its own replacement (`$1` the ids, `$2` their replacements, in
/// the same order: the user's by identity's tombstone, each merged id's by a random id of its own, so no two
/// erased ids collide in a unique key). Nothing else names a user.
struct ErasureStore: Sendable {
    static let recordErasure = PostgresStatement(
        name: "wallet_record_erasure",
        sql: "INSERT INTO erasures (erasure_id) VALUES ($1) ON CONFLICT (erasure_id) DO NOTHING RETURNING erasure_id")
    /// The ids merged into the user here (sources of `merged_users` whose target is the user).
    static let mergedSources = PostgresStatement(
        name: "wallet_erasure_merged_sources", sql: "SELECT source_id FROM merged_users WHERE target_id = $1")
    /// Replace the ids, children of nothing: every statement touches only rows naming an erased id.
    static let replaceStatements: [PostgresStatement] = [
        // Accounts are never deleted (the ledger refers to them); the balance stays with the tombstone.
        PostgresStatement(
            name: "wallet_erasure_accounts",
            sql: """
                UPDATE accounts a SET user_id = r.replacement
                FROM unnest($1::uuid[], $2::uuid[]) AS r (erased, replacement) WHERE a.user_id = r.erased
                """),
        // Transfers keep their amounts and accounts; only the player they name changes.
        PostgresStatement(
            name: "wallet_erasure_transfers",
            sql: """
                UPDATE transfers t SET user_id = r.replacement
                FROM unnest($1::uuid[], $2::uuid[]) AS r (erased, replacement) WHERE t.user_id = r.erased
                """),
        // Bets are the record the bet transfers refer to (by bet id) and prove the outcomes fair.
        PostgresStatement(
            name: "wallet_erasure_bets",
            sql: """
                UPDATE bets b SET user_id = r.replacement
                FROM unnest($1::uuid[], $2::uuid[]) AS r (erased, replacement) WHERE b.user_id = r.erased
                """),
        // Seeds are never deleted (bets refer to them); the active one is revealed, so it never draws again and
        // every bet it drew for can be verified.
        PostgresStatement(
            name: "wallet_erasure_seeds",
            sql: """
                UPDATE server_seeds s SET user_id = r.replacement, revealed_at = coalesce(s.revealed_at, now())
                FROM unnest($1::uuid[], $2::uuid[]) AS r (erased, replacement) WHERE s.user_id = r.erased
                """),
    ]
    /// Records of merges between erased ids: they name the ids and nothing needs them any more.
    static let deleteStatements: [PostgresStatement] = [
        PostgresStatement(
            name: "wallet_erasure_merged_users",
            sql: "DELETE FROM merged_users WHERE source_id = ANY($1) OR target_id = ANY($1)"),
        PostgresStatement(
            name: "wallet_erasure_merges",
            sql: "DELETE FROM merges WHERE source_user_id = ANY($1) OR target_user_id = ANY($1)"),
    ]

    /// Records the erasure; false when this erasure id was applied before (nothing changes then).
    func record(_ erasureID: String, in transaction: PostgresTransaction) async throws -> Bool {
        try await !transaction.execute(Self.recordErasure, [erasureID]).isEmpty
    }

    /// The ids merged into `userID` according to the wallet's own record.
    func mergedSources(of userID: RaveID, in transaction: PostgresTransaction) async throws -> [RaveID] {
        try await transaction.execute(Self.mergedSources, [userID]).map { try $0.decode(RaveID.self, at: 0) }
    }

    /// Replaces each of `ids` by its `replacements` entry in every row that keeps it, and deletes the merge records
    /// naming them; the rows changed.
    func erase(_ ids: [RaveID], replacements: [RaveID], in transaction: PostgresTransaction) async throws -> UInt64 {
        var rows: UInt64 = 0
        for statement in Self.replaceStatements {
            rows += UInt64(try await transaction.execute(statement, [ids, replacements]).affectedRowCount)
        }
        for statement in Self.deleteStatements {
            rows += UInt64(try await transaction.execute(statement, [ids]).affectedRowCount)
        }
        return rows
    }
}
