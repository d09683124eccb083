import RaveMerges
import RavePostgres

/// Erases a deleted account's devices, deliveries and inbox (docs/push.md, "Deleting an account").
///
/// Device tokens (with their consent and preferences), every delivery to them (queued, held or done) and the
/// inbox go; a notification sent to the user and others stays for the others, its stored request naming the
/// tombstone instead (a replay of that send is then refused as a different request); the merges applied here
/// name the tombstone too, so a late repeat of such a merge still changes nothing.
struct ErasureStore: Sendable {
    static let steps = [
        ErasureStep.delete(from: "deliveries", where: "user_id", service: "push"),
        ErasureStep.delete(from: "inbox_entries", where: "user_id", service: "push"),
        ErasureStep.delete(from: "device_tokens", where: "user_id", service: "push"),
        ErasureStep.rewrite(in: "notifications", column: "request", service: "push"),
        ErasureStep.replace(in: "merges", column: "source_user_id", service: "push"),
        ErasureStep.replace(in: "merges", column: "target_user_id", service: "push"),
    ]

    /// Applies the erasure in `transaction`; nil when this erasure id was applied before (nothing changes then),
    /// else the rows erased or anonymised.
    func erase(
        _ erasure: UserErasure, merges: MergedUsers, in transaction: PostgresTransaction
    ) async throws -> Int? {
        guard let erased = try await merges.beginErasure(erasure, in: transaction) else { return nil }
        return try await erased.apply(Self.steps, in: transaction) + erased.mergedRows
    }
}
