import RaveEvents
import RaveMerges
import RavePostgres

/// Erases a deleted account's graph (docs/social.md, "Deleting an account"), once per erasure id.
///
/// Every relationship, request and block naming the user or an id merged into it goes, in both directions, with
/// the contacts they uploaded and every other user's contact matched to them; the counts of the users they were
/// related to are recomputed in the same transaction. Nothing is kept under the tombstone but the merges applied
/// here (which name it instead of the user, so a late repeat of such a merge still changes nothing).
struct ErasureStore: Sendable {
    let pool: PostgresPool

    /// Every user whose counts the erasure changes: everyone related to one of the ids.
    private static let affectedUsers = PostgresStatement(
        name: "social_erase_affected", sql: "SELECT DISTINCT owner_id FROM edges WHERE peer_id = ANY($1::uuid[])")
    private static let deletions = [
        ErasureStep.delete(from: "edges", where: "owner_id", "peer_id", service: "social"),
        ErasureStep.delete(from: "friend_requests", where: "sender_id", "recipient_id", service: "social"),
        ErasureStep.delete(from: "blocks", where: "blocker_id", "blocked_id", service: "social"),
    ]
    /// The user's own contacts, and everyone else's contact that is the user (matched, or keyed by the id).
    private static let contactsNaming = """
        SELECT owner_id, contact_key FROM contacts
        WHERE owner_id = ANY($1::uuid[]) OR user_id = ANY($1::uuid[])
           OR contact_key = ANY(ARRAY(SELECT 'rave:' || replace(i::text, '-', '') FROM unnest($1::uuid[]) AS i))
        """
    private static let deleteContactSources = PostgresStatement(
        name: "social_erase_contact_sources",
        sql: "DELETE FROM contact_sources WHERE (owner_id, contact_key) IN (\(contactsNaming))")
    private static let deleteContacts = PostgresStatement(
        name: "social_erase_contacts",
        sql: "DELETE FROM contacts WHERE (owner_id, contact_key) IN (\(contactsNaming))")
    private static let anonymiseMerges = [
        ErasureStep.replace(in: "applied_merges", column: "source_id", service: "social"),
        ErasureStep.replace(in: "applied_merges", column: "target_id", service: "social"),
    ]

    /// Applies the erasure; nil when this erasure id was applied before (nothing changes then), else the rows
    /// erased or anonymised.
    func erase(_ erasure: UserErasure, merges: MergedUsers) async throws -> Int? {
        try await pool.transaction(isolation: .serializable, retryOnSerializationFailure: true) { transaction in
            guard let erased = try await merges.beginErasure(erasure, in: transaction) else { return nil }
            return try await erase(erased, in: transaction) + erased.mergedRows
        }
    }

    /// Erases what a call of this process wrote under the ids while another replica applied their erasure.
    func sweep(_ erased: ErasedIDs) async throws {
        try await pool.transaction(isolation: .serializable, retryOnSerializationFailure: true) { transaction in
            _ = try await erase(erased, in: transaction)
        }
    }

    private func erase(_ erased: ErasedIDs, in transaction: PostgresTransaction) async throws -> Int {
        let ids = erased.ids
        // Requests, acceptances and blocks naming the user (read-committed, under these locks) wait for the erasure.
        try await RelationshipLocks.lock(ids, in: transaction)
        let affected = try await transaction.execute(Self.affectedUsers, [ids]).map {
            try $0.decode(RaveID.self, column: "owner_id")
        }
        var rows = try await erased.apply(Self.deletions, in: transaction)
        rows += try await transaction.execute(MergeStore.clearCounts, [ids + affected]).affectedRowCount
        try await transaction.execute(MergeStore.recount, [affected])
        rows += try await transaction.execute(Self.deleteContactSources, [ids]).affectedRowCount
        rows += try await transaction.execute(Self.deleteContacts, [ids]).affectedRowCount
        rows += try await erased.apply(Self.anonymiseMerges, in: transaction)
        rows += try await EventOutbox.forget(naming: ids, in: transaction)
        // The affected users may be thousands, more than a notification carries: every cache starts over.
        try await RelationshipStore.announceFriendsChanged(of: nil, in: transaction)
        return rows
    }
}
