import RaveMerges
import RavePostgres
import RaveRPC

/// What an erasure does to the wallet's tables (docs/wallet.md, "Erasure"), in one transaction.
///
/// The ledger must keep summing to zero and its history must stay whole, so money rows are kept and only the ids
/// they carry change: each erased id is replaced by its own replacement (`$1` the ids, `$2` their replacements, in
/// the same order: the user's by identity's tombstone, each merged id's by a random id of its own, so no two
/// erased ids collide in a unique key). Nothing else names a user.
struct ErasureStore: Sendable {
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
    /// The wallet's own records of merges between erased ids: they name the ids and nothing needs them any more
    /// (`merged_users` rows go in `MergedUsers.beginErasure`).
    static let deleteMerges = PostgresStatement(
        name: "wallet_erasure_merges",
        sql: "DELETE FROM merges WHERE source_user_id = ANY($1) OR target_user_id = ANY($1)")

    /// Replaces each erased id in every row that keeps it, and deletes the merge records naming them.
    ///
    /// The user's id (first) is replaced by the erasure's tombstone, each other id by a random id of its own;
    /// returns the rows changed.
    func erase(_ erased: ErasedIDs, in transaction: PostgresTransaction) async throws -> Int {
        let replacements = [erased.tombstoneID] + erased.ids.dropFirst().map { _ in RaveID.random() }
        var rows = 0
        for statement in Self.replaceStatements {
            rows += try await transaction.execute(statement, [erased.ids, replacements]).affectedRowCount
        }
        return try await rows + transaction.execute(Self.deleteMerges, [erased.ids]).affectedRowCount
    }
}
