import RaveMerges
import RavePostgres

/// Unites a merged-away user's graph into the target's (DESIGN.md §7), once per merge id.
///
/// Rules: every relationship, request, block and contact of the source becomes the target's; one that would
/// relate the target to itself is dropped; duplicates collapse to the target's existing row; and blocks win: after
/// the union, nothing relates the target to a user either of them blocked or was blocked by. The friends limit
/// is not applied: a merge must not lose relationships.
struct MergeStore: Sendable {
    let pool: PostgresPool

    private static let recordMerge = PostgresStatement(
        name: "social_merge_record",
        sql: """
            INSERT INTO applied_merges (merge_id, source_id, target_id) VALUES ($1, $2, $3)
            ON CONFLICT DO NOTHING RETURNING 1
            """)
    /// Every user whose counts the merge may change: the two, and everyone related to either.
    private static let affectedUsers = PostgresStatement(
        name: "social_merge_affected",
        sql: "SELECT DISTINCT owner_id FROM edges WHERE peer_id = $1 OR peer_id = $2")
    private static let moveBlocks = PostgresStatement(
        name: "social_merge_blocks",
        sql: """
            WITH moved AS (
                INSERT INTO blocks (blocker_id, blocked_id, created_at)
                SELECT CASE WHEN blocker_id = $1 THEN $2 ELSE blocker_id END,
                       CASE WHEN blocked_id = $1 THEN $2 ELSE blocked_id END, created_at
                FROM blocks WHERE (blocker_id = $1 AND blocked_id <> $2) OR (blocked_id = $1 AND blocker_id <> $2)
                ON CONFLICT DO NOTHING)
            DELETE FROM blocks WHERE blocker_id = $1 OR blocked_id = $1
            """)
    /// The source's edges are found through the peer index: each has a mirror row naming the source as peer.
    private static let moveEdges = PostgresStatement(
        name: "social_merge_edges",
        sql: """
            WITH source_edges AS (
                SELECT list_id, owner_id, direction, peer_id, created_at FROM edges WHERE peer_id = $1
                UNION ALL
                SELECT e.list_id, e.owner_id, e.direction, e.peer_id, e.created_at FROM edges e
                WHERE e.owner_id = $1 AND e.list_id IN (SELECT DISTINCT list_id FROM edges WHERE peer_id = $1)),
            moved AS (
                INSERT INTO edges (list_id, owner_id, direction, peer_id, created_at)
                SELECT list_id, CASE WHEN owner_id = $1 THEN $2 ELSE owner_id END, direction,
                       CASE WHEN peer_id = $1 THEN $2 ELSE peer_id END, created_at
                FROM source_edges WHERE owner_id <> $2 AND peer_id <> $2
                ON CONFLICT DO NOTHING)
            DELETE FROM edges e USING source_edges s
            WHERE e.list_id = s.list_id AND e.owner_id = s.owner_id AND e.direction = s.direction AND e.peer_id = s.peer_id
            """)
    private static let moveRequests = PostgresStatement(
        name: "social_merge_requests",
        sql: """
            WITH moved AS (
                INSERT INTO friend_requests (list_id, sender_id, recipient_id, created_at)
                SELECT list_id, CASE WHEN sender_id = $1 THEN $2 ELSE sender_id END,
                       CASE WHEN recipient_id = $1 THEN $2 ELSE recipient_id END, created_at
                FROM friend_requests
                WHERE (sender_id = $1 AND recipient_id <> $2) OR (recipient_id = $1 AND sender_id <> $2)
                ON CONFLICT DO NOTHING)
            DELETE FROM friend_requests WHERE sender_id = $1 OR recipient_id = $1
            """)
    /// Blocks win: the target's edges and requests with anyone on either side of one of its blocks go.
    private static let applyTargetBlocks = PostgresStatement(
        name: "social_merge_apply_blocks",
        sql: """
            WITH blocked AS (
                SELECT blocked_id AS user_id FROM blocks WHERE blocker_id = $1
                UNION SELECT blocker_id FROM blocks WHERE blocked_id = $1),
            requests AS (
                DELETE FROM friend_requests
                WHERE (recipient_id = $1 AND sender_id IN (SELECT user_id FROM blocked))
                    OR (sender_id = $1 AND recipient_id IN (SELECT user_id FROM blocked)))
            DELETE FROM edges
            WHERE (peer_id = $1 AND owner_id IN (SELECT user_id FROM blocked))
                OR (peer_id IN (SELECT user_id FROM blocked) AND owner_id = $1)
            """)
    /// A request between users who are now friends in that list is answered already.
    private static let dropAnsweredRequests = PostgresStatement(
        name: "social_merge_answered",
        sql: """
            DELETE FROM friend_requests r USING edges e
            WHERE (r.sender_id = $1 OR r.recipient_id = $1) AND e.list_id = r.list_id AND e.owner_id = r.sender_id
                AND e.direction = 0 AND e.peer_id = r.recipient_id
            """)
    /// Counts are recomputed from the mirror rows (a user's row of one direction mirrors the peer's row of the
    /// opposite direction), which the peer index finds.
    static let clearCounts = PostgresStatement(
        name: "social_merge_clear_counts", sql: "DELETE FROM edge_counts WHERE owner_id = ANY($1::uuid[])")
    static let recount = PostgresStatement(
        name: "social_merge_recount",
        sql: """
            INSERT INTO edge_counts (list_id, owner_id, direction, count)
            SELECT list_id, peer_id, CASE direction WHEN 1 THEN 2 WHEN 2 THEN 1 ELSE 0 END, count(*)
            FROM edges WHERE peer_id = ANY($1::uuid[]) GROUP BY 1, 2, 3
            """)
    private static let moveOwnContacts = PostgresStatement(
        name: "social_merge_own_contacts",
        sql: """
            INSERT INTO contacts (owner_id, contact_key, user_id, display_name, picture_url, created_at)
            SELECT $2, contact_key, user_id, display_name, picture_url, created_at FROM contacts
            WHERE owner_id = $1 AND user_id IS DISTINCT FROM $2
            ON CONFLICT DO NOTHING
            """)
    private static let moveOwnSources = PostgresStatement(
        name: "social_merge_own_sources",
        sql: """
            INSERT INTO contact_sources (owner_id, contact_key, source, third_party, external_id)
            SELECT $2, s.contact_key, s.source, s.third_party, s.external_id FROM contact_sources s
            JOIN contacts c ON c.owner_id = s.owner_id AND c.contact_key = s.contact_key
            WHERE s.owner_id = $1 AND c.user_id IS DISTINCT FROM $2
            ON CONFLICT DO NOTHING
            """)
    /// Other users' contacts of the source become contacts of the target, under the target's key.
    private static let rekeyContacts = PostgresStatement(
        name: "social_merge_rekey_contacts",
        sql: """
            INSERT INTO contacts (owner_id, contact_key, user_id, display_name, picture_url, created_at)
            SELECT owner_id, $3, $2, display_name, picture_url, created_at FROM contacts
            WHERE user_id = $1 AND owner_id <> $2 AND owner_id <> $1
            ON CONFLICT DO NOTHING
            """)
    private static let rekeySources = PostgresStatement(
        name: "social_merge_rekey_sources",
        sql: """
            INSERT INTO contact_sources (owner_id, contact_key, source, third_party, external_id)
            SELECT s.owner_id, $3, s.source, s.third_party, s.external_id FROM contact_sources s
            JOIN contacts c ON c.owner_id = s.owner_id AND c.contact_key = s.contact_key
            WHERE c.user_id = $1 AND c.owner_id <> $2 AND c.owner_id <> $1
            ON CONFLICT DO NOTHING
            """)
    private static let deleteSourceContacts = PostgresStatement(
        name: "social_merge_delete_contacts",
        sql: "DELETE FROM contacts WHERE owner_id = $1 OR user_id = $1 OR (owner_id = $2 AND user_id = $2)")

    /// Applies the merge and records it in `merged_users`; false when this merge id was applied before (nothing
    /// changes then).
    func merge(mergeID: String, source: RaveID, target: RaveID, merges: MergedUsers) async throws -> Bool {
        try await pool.transaction(isolation: .serializable, retryOnSerializationFailure: true) { transaction in
            // Requests, acceptances and blocks of either user (read-committed, under these locks) wait for the merge.
            try await RelationshipLocks.lock([source, target], in: transaction)
            guard try await !transaction.execute(Self.recordMerge, [mergeID, source, target]).isEmpty else {
                return false
            }
            let final = try await merges.record(mergeID: mergeID, source: source, target: target, in: transaction)
            if final != target { try await RelationshipLocks.lock([final], in: transaction) }
            try await move(source, into: final, in: transaction)
            return true
        }
    }

    /// Moves whatever the source still holds (relationships a call made under the source while the merge ran in
    /// another process), by the merge's rules.
    func sweep(source: RaveID, target: RaveID) async throws {
        try await pool.transaction(isolation: .serializable, retryOnSerializationFailure: true) { transaction in
            try await RelationshipLocks.lock([source, target], in: transaction)
            try await move(source, into: target, in: transaction)
        }
    }

    private func move(_ source: RaveID, into target: RaveID, in transaction: PostgresTransaction) async throws {
        var affected = try await transaction.execute(Self.affectedUsers, [source, target]).map {
            try $0.decode(RaveID.self, column: "owner_id")
        }
        affected.append(contentsOf: [source, target])
        try await transaction.execute(Self.moveBlocks, [source, target])
        try await transaction.execute(Self.moveEdges, [source, target])
        try await transaction.execute(Self.moveRequests, [source, target])
        try await transaction.execute(Self.applyTargetBlocks, [target])
        try await transaction.execute(Self.dropAnsweredRequests, [target])
        try await transaction.execute(Self.clearCounts, [affected])
        try await transaction.execute(Self.recount, [affected])
        try await transaction.execute(Self.moveOwnContacts, [source, target])
        try await transaction.execute(Self.moveOwnSources, [source, target])
        let targetKey = "rave:" + target.hex
        try await transaction.execute(Self.rekeyContacts, [source, target, targetKey])
        try await transaction.execute(Self.rekeySources, [source, target, targetKey])
        try await transaction.execute(Self.deleteSourceContacts, [source, target])
        // The affected users may be thousands, more than a notification carries: every cache starts over.
        try await RelationshipStore.announceFriendsChanged(of: nil, in: transaction)
    }
}
