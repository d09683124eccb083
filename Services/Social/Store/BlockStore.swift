import RavePostgres

/// Blocks between users.
///
/// A block is not per list: it ends every relationship and request between the two.
struct BlockStore: Sendable {
    let pool: PostgresPool

    private static let insertBlock = PostgresStatement(
        name: "social_block_insert",
        sql: "INSERT INTO blocks (blocker_id, blocked_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
    /// Both users' edges between them in every list, with the counts of the rows removed.
    ///
    /// The peer index finds each row: every edge between the two has the other as its peer.
    private static let deleteEdgesBetween = PostgresStatement(
        name: "social_block_edges",
        sql: """
            WITH deleted AS (
                DELETE FROM edges WHERE (peer_id = $1 AND owner_id = $2) OR (peer_id = $2 AND owner_id = $1)
                RETURNING list_id, owner_id, direction)
            UPDATE edge_counts c SET count = c.count - d.removed
            FROM (SELECT list_id, owner_id, direction, count(*) AS removed FROM deleted GROUP BY 1, 2, 3) d
            WHERE c.list_id = d.list_id AND c.owner_id = d.owner_id AND c.direction = d.direction
            """)
    private static let deleteRequestsBetween = PostgresStatement(
        name: "social_block_requests",
        sql: """
            DELETE FROM friend_requests
            WHERE (recipient_id = $1 AND sender_id = $2) OR (recipient_id = $2 AND sender_id = $1)
            """)
    private static let deleteBlock = PostgresStatement(
        name: "social_block_delete", sql: "DELETE FROM blocks WHERE blocker_id = $1 AND blocked_id = $2 RETURNING 1")
    private static let selectBlocks = PostgresStatement(
        name: "social_block_pair",
        sql: """
            SELECT blocker_id FROM blocks
            WHERE (blocker_id = $1 AND blocked_id = $2) OR (blocker_id = $2 AND blocked_id = $1)
            """)

    /// Blocks `blocked` and removes friendships, follows and requests between the two in every list.
    ///
    /// Under both users' `RelationshipLocks`: a request or acceptance between the two either committed before (and
    /// its rows are removed here) or runs after and finds the block.
    func block(_ blocked: RaveID, by blocker: RaveID) async throws {
        try await pool.transaction(retryOnSerializationFailure: true) { transaction in
            try await RelationshipLocks.lock([blocker, blocked], in: transaction)
            try await transaction.execute(Self.insertBlock, [blocker, blocked])
            try await transaction.execute(Self.deleteEdgesBetween, [blocker, blocked])
            try await transaction.execute(Self.deleteRequestsBetween, [blocker, blocked])
            try await RelationshipStore.announceFriendsChanged(of: [blocker, blocked], in: transaction)
        }
    }

    /// False when there was no such block.
    func unblock(_ blocked: RaveID, by blocker: RaveID) async throws -> Bool {
        try await !pool.execute(Self.deleteBlock, [blocker, blocked]).isEmpty
    }

    /// Who blocked whom between the two.
    func blocks(
        between user: RaveID, and other: RaveID
    ) async throws -> (userBlockedOther: Bool, otherBlockedUser: Bool) {
        let blockers = try await pool.execute(Self.selectBlocks, [user, other]).map {
            try $0.decode(RaveID.self, column: "blocker_id")
        }
        return (blockers.contains(user), blockers.contains(other))
    }
}
