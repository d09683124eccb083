import RaveEvents
import RaveMerges
import RavePostgres

/// Erases a deleted account's scores and achievements (docs/leaderboards.md, "Deleting an account"), once per
/// erasure id.
///
/// Every score of the user and of the ids merged into it goes, on every board and version (tournaments and past
/// periods included), with their unlocks and the events naming them; the merges applied here name the tombstone
/// instead, so a late repeat of such a merge still changes nothing.
struct ErasureStore: Sendable {
    let pool: PostgresPool

    private static let steps = [
        ErasureStep.delete(from: "scores", where: "user_id", service: "leaderboards"),
        ErasureStep.delete(from: "achievement_unlocks", where: "user_id", service: "leaderboards"),
        ErasureStep.replace(in: "applied_merges", column: "source_user_id", service: "leaderboards"),
        ErasureStep.replace(in: "applied_merges", column: "target_user_id", service: "leaderboards"),
    ]

    /// Applies the erasure; nil when this erasure id was applied before (nothing changes then), else the ids it
    /// covered and the rows erased or anonymised.
    func erase(_ erasure: UserErasure, merges: MergedUsers) async throws -> (erased: ErasedIDs, rows: Int)? {
        try await pool.transaction { transaction in
            guard let erased = try await merges.beginErasure(erasure, in: transaction) else { return nil }
            return (erased, try await erase(erased, in: transaction) + erased.mergedRows)
        }
    }

    /// Erases what a call of this instance wrote under the ids while another instance applied their erasure.
    func sweep(_ erased: ErasedIDs) async throws {
        try await pool.transaction { transaction in _ = try await erase(erased, in: transaction) }
    }

    private func erase(_ erased: ErasedIDs, in transaction: PostgresTransaction) async throws -> Int {
        try await erased.apply(Self.steps, in: transaction)
            + EventOutbox.forget(naming: erased.ids, in: transaction)
    }
}
