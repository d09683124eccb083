import RaveMessages
import RavePostgres

/// Reads relationships: list pages ordered by name or recency, requests, blocked users, and id lists.
struct QueryStore: Sendable {
    let pool: PostgresPool

    /// A page row: the peer, since when, and the name it was sorted by (nil when not sorted by name).
    typealias Row = (peer: RaveID, since: PostgresTimestamp, sortName: String?)

    /// Every page also answers its list's total (or the prefix's matches), so a page is one round trip: an
    /// uncorrelated scalar subquery runs once per statement, and only the branch the prefix selects.
    private static let total = """
        CASE WHEN $4 = '' THEN COALESCE((SELECT count FROM edge_counts
                WHERE list_id = $1 AND owner_id = $2 AND direction = $3), 0)::bigint
            ELSE (SELECT count(*) FROM edges WHERE list_id = $1 AND owner_id = $2 AND direction = $3
                AND sort_name LIKE $4) END AS total
        """
    /// Name order: an index-only range scan of `edges_by_name_covering`; the keyset variant starts after the
    /// cursor's row.
    private static let byName = PostgresStatement(
        name: "social_page_name",
        sql: """
            SELECT peer_id, created_at, sort_name, \(total) FROM edges
            WHERE list_id = $1 AND owner_id = $2 AND direction = $3 AND ($4 = '' OR sort_name LIKE $4)
            ORDER BY sort_name, peer_id OFFSET $5 LIMIT $6
            """)
    private static let byNameAfter = PostgresStatement(
        name: "social_page_name_after",
        sql: """
            SELECT peer_id, created_at, sort_name, \(total) FROM edges
            WHERE list_id = $1 AND owner_id = $2 AND direction = $3 AND ($4 = '' OR sort_name LIKE $4)
                AND (sort_name, peer_id) > ($5::text, $6::uuid)
            ORDER BY sort_name, peer_id LIMIT $7
            """)
    /// Recency order: a range scan of `edges_recent`.
    private static let byRecency = PostgresStatement(
        name: "social_page_recent",
        sql: """
            SELECT peer_id, created_at, sort_name, \(total) FROM edges
            WHERE list_id = $1 AND owner_id = $2 AND direction = $3 AND ($4 = '' OR sort_name LIKE $4)
            ORDER BY created_at DESC, peer_id DESC OFFSET $5 LIMIT $6
            """)
    private static let byRecencyAfter = PostgresStatement(
        name: "social_page_recent_after",
        sql: """
            SELECT peer_id, created_at, sort_name, \(total) FROM edges
            WHERE list_id = $1 AND owner_id = $2 AND direction = $3 AND ($4 = '' OR sort_name LIKE $4)
                AND (created_at, peer_id) < ($5::timestamptz, $6::uuid)
            ORDER BY created_at DESC, peer_id DESC LIMIT $7
            """)
    private static let countMatching = PostgresStatement(
        name: "social_page_count_named",
        sql: """
            SELECT count(*) AS total FROM edges
            WHERE list_id = $1 AND owner_id = $2 AND direction = $3 AND sort_name LIKE $4
            """)
    /// One binary `uuid[]` cell instead of a row per peer: FriendIds of a thousand is a hot path for leaderboards,
    /// and 16 raw bytes per peer spare the server formatting text and the client parsing it (NULL when none).
    private static let peerIDs = PostgresStatement(
        name: "social_peer_ids_array",
        sql: """
            SELECT array_agg(peer_id) AS ids FROM edges
            WHERE list_id = $1 AND owner_id = $2 AND direction = $3
            """)
    private static let incoming = PostgresStatement(
        name: "social_requests_incoming",
        sql: """
            SELECT sender_id AS peer_id, created_at, count(*) OVER () AS total FROM friend_requests
            WHERE list_id = $1 AND recipient_id = $2 ORDER BY created_at DESC, sender_id DESC OFFSET $3 LIMIT $4
            """)
    private static let outgoing = PostgresStatement(
        name: "social_requests_outgoing",
        sql: """
            SELECT recipient_id AS peer_id, created_at, count(*) OVER () AS total FROM friend_requests
            WHERE list_id = $1 AND sender_id = $2 ORDER BY created_at DESC, recipient_id DESC OFFSET $3 LIMIT $4
            """)
    private static let blocked = PostgresStatement(
        name: "social_blocked",
        sql: """
            SELECT blocked_id AS peer_id, created_at, count(*) OVER () AS total FROM blocks
            WHERE blocker_id = $1 ORDER BY created_at DESC, blocked_id DESC OFFSET $2 LIMIT $3
            """)

    /// One page of the owner's edges in `direction`, the cursor of the next page (nil on the last), and the total
    /// the query matches (nil when the page is empty: the statement had no row to carry it).
    func page(
        list: RelationshipList, owner: RaveID, direction: EdgeDirection, request: PageRequest
    ) async throws -> (rows: [Row], nextCursor: ListCursor?, total: Int?) {
        let pattern = request.prefix.isEmpty ? "" : request.prefixPattern
        let head: [(any PostgresEncodable)?] = [list.id, owner, direction.rawValue, pattern]
        // One row more than asked says whether there is a next page.
        let result: PostgresRows
        switch request.cursor {
        case .displayName(let name, let peer)?:
            result = try await pool.execute(Self.byNameAfter, head + [name, peer, request.limit + 1])
        case .mostRecent(let since, let peer)?:
            result = try await pool.execute(Self.byRecencyAfter, head + [since, peer, request.limit + 1])
        case nil:
            let statement = request.order == .mostRecent ? Self.byRecency : Self.byName
            result = try await pool.execute(statement, head + [request.offset, request.limit + 1])
        }
        var rows: [(row: Row, sortName: String)] = []
        var total: Int?
        for row in result {
            let peer = try row.decode(RaveID.self, column: "peer_id")
            let sortName = try row.decode(String.self, column: "sort_name")
            total = Int(try row.decode(Int64.self, column: "total"))
            rows.append(((peer, try row.decode(PostgresTimestamp.self, column: "created_at"), sortName), sortName))
        }
        guard rows.count > request.limit else { return (rows.map(\.row), nil, total) }
        rows.removeLast()
        let last = rows[rows.count - 1]
        let cursor: ListCursor =
            request.order == .mostRecent
            ? .mostRecent(since: last.row.since, peerID: last.row.peer)
            : .displayName(sortName: last.sortName, peerID: last.row.peer)
        return (rows.map(\.row), cursor, total)
    }

    /// How many edges match a prefix (the per-list count answers when there is none).
    func countMatching(
        list: RelationshipList, owner: RaveID, direction: EdgeDirection, prefixPattern: String
    ) async throws -> Int {
        let rows = try await pool.execute(Self.countMatching, [list.id, owner, direction.rawValue, prefixPattern])
        return try Int(rows.first?.decode(Int64.self, column: "total") ?? 0)
    }

    /// Every peer of the owner in `direction` (FriendIds, FollowingIds).
    func peerIDs(list: RelationshipList, owner: RaveID, direction: EdgeDirection) async throws -> [RaveID] {
        let rows = try await pool.execute(Self.peerIDs, [list.id, owner, direction.rawValue])
        return try rows.first?.decode(PeerIDArray.self, column: "ids").ids ?? []
    }

    /// Pending requests to (incoming) or from the user, newest first.
    func requests(
        list: RelationshipList, user: RaveID, incoming: Bool, offset: Int, limit: Int
    ) async throws -> (rows: [Row], total: Int) {
        try Self.rowsAndTotal(
            await pool.execute(incoming ? Self.incoming : Self.outgoing, [list.id, user, offset, limit]))
    }

    /// The users `blocker` blocked, newest first.
    func blockedUsers(by blocker: RaveID, offset: Int, limit: Int) async throws -> (rows: [Row], total: Int) {
        try Self.rowsAndTotal(await pool.execute(Self.blocked, [blocker, offset, limit]))
    }

    private static func rowsAndTotal(_ result: PostgresRows) throws -> (rows: [Row], total: Int) {
        var total = 0
        let rows = try result.map { row -> Row in
            total = Int(try row.decode(Int64.self, column: "total"))
            return (try row.decode(RaveID.self, column: "peer_id"), try row.decode(column: "created_at"), nil)
        }
        return (rows, total)
    }
}
