import RaveMessages
import RavePostgres

/// Reads relationships: list pages ordered by name or recency, requests, blocked users, and id lists.
struct QueryStore: Sendable {
    let pool: PostgresPool

    /// A page row: the peer, since when, and the cached profile it was ordered by.
    typealias Row = (peer: RaveID, since: PostgresTimestamp, cached: DirectoryProfile?)

    private static let byName = PostgresStatement(
        name: "social_page_by_name",
        sql: """
            SELECT e.peer_id, e.created_at, p.display_name, p.picture_url, COALESCE(p.sort_name, '') AS sort_name
            FROM edges e LEFT JOIN profiles p ON p.app_id = $4 AND p.user_id = e.peer_id
            WHERE e.list_id = $1 AND e.owner_id = $2 AND e.direction = $3
                AND ($5 = '' OR COALESCE(p.sort_name, '') LIKE $5)
                AND ($6::text IS NULL OR (COALESCE(p.sort_name, ''), e.peer_id) > ($6::text, $7::uuid))
            ORDER BY COALESCE(p.sort_name, ''), e.peer_id
            OFFSET $8 LIMIT $9
            """)
    private static let byRecency = PostgresStatement(
        name: "social_page_by_recency",
        sql: """
            SELECT e.peer_id, e.created_at, p.display_name, p.picture_url, COALESCE(p.sort_name, '') AS sort_name
            FROM edges e LEFT JOIN profiles p ON p.app_id = $4 AND p.user_id = e.peer_id
            WHERE e.list_id = $1 AND e.owner_id = $2 AND e.direction = $3
                AND ($5 = '' OR COALESCE(p.sort_name, '') LIKE $5)
                AND ($6::timestamptz IS NULL OR (e.created_at, e.peer_id) < ($6::timestamptz, $7::uuid))
            ORDER BY e.created_at DESC, e.peer_id DESC
            OFFSET $8 LIMIT $9
            """)
    private static let countMatching = PostgresStatement(
        name: "social_page_count",
        sql: """
            SELECT count(*) AS total FROM edges e LEFT JOIN profiles p ON p.app_id = $4 AND p.user_id = e.peer_id
            WHERE e.list_id = $1 AND e.owner_id = $2 AND e.direction = $3 AND COALESCE(p.sort_name, '') LIKE $5
            """)
    private static let peerIDs = PostgresStatement(
        name: "social_peer_ids",
        sql: "SELECT peer_id FROM edges WHERE list_id = $1 AND owner_id = $2 AND direction = $3")
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

    /// One page of the owner's edges in `direction`, plus the cursor of the next page (nil on the last).
    func page(
        list: RelationshipList, owner: RaveID, direction: EdgeDirection, request: PageRequest, appID: RaveID
    ) async throws -> (rows: [Row], nextCursor: ListCursor?) {
        var after: (any PostgresEncodable)?
        var afterPeer: RaveID?
        switch request.cursor {
        case .displayName(let name, let peer)?: (after, afterPeer) = (name, peer)
        case .mostRecent(let since, let peer)?: (after, afterPeer) = (since, peer)
        case nil: break
        }
        let statement = request.order == .mostRecent ? Self.byRecency : Self.byName
        let pattern = request.prefix.isEmpty ? "" : request.prefixPattern
        // One row more than asked says whether there is a next page.
        let result = try await pool.execute(
            statement,
            [
                list.id, owner, direction.rawValue, appID, pattern, after, afterPeer, request.offset,
                request.limit + 1,
            ])
        var rows: [(row: Row, sortName: String)] = []
        for row in result {
            let peer = try row.decode(RaveID.self, column: "peer_id")
            let name = try row.decode(String?.self, column: "display_name")
            let cached = try name.map {
                DirectoryProfile(userID: peer, displayName: $0, pictureURL: try row.decode(column: "picture_url"))
            }
            rows.append(
                (
                    (peer, try row.decode(PostgresTimestamp.self, column: "created_at"), cached),
                    try row.decode(String.self, column: "sort_name")
                ))
        }
        guard rows.count > request.limit else { return (rows.map(\.row), nil) }
        rows.removeLast()
        let last = rows[rows.count - 1]
        let cursor: ListCursor =
            request.order == .mostRecent
            ? .mostRecent(since: last.row.since, peerID: last.row.peer)
            : .displayName(sortName: last.sortName, peerID: last.row.peer)
        return (rows.map(\.row), cursor)
    }

    /// How many edges match a prefix (the per-list count answers when there is none).
    func countMatching(
        list: RelationshipList, owner: RaveID, direction: EdgeDirection, prefixPattern: String, appID: RaveID
    ) async throws -> Int {
        let rows = try await pool.execute(
            Self.countMatching, [list.id, owner, direction.rawValue, appID, prefixPattern])
        return try Int(rows.first?.decode(Int64.self, column: "total") ?? 0)
    }

    /// Every peer of the owner in `direction` (FriendIds, FollowingIds).
    func peerIDs(list: RelationshipList, owner: RaveID, direction: EdgeDirection) async throws -> [RaveID] {
        try await pool.execute(Self.peerIDs, [list.id, owner, direction.rawValue]).map {
            try $0.decode(RaveID.self, column: "peer_id")
        }
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
