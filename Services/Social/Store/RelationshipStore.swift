import RaveEvents
import RaveMessages
import RavePostgres
import RaveProtobuf

/// Which side of a relationship an edge row describes (the `direction` column).
enum EdgeDirection: Int, Sendable {
    /// Written for both users of a friendship.
    case friend = 0
    /// The owner follows the peer.
    case following = 1
    /// The peer follows the owner.
    case follower = 2
}

/// Lower-cased display names of users as a list sorts them (its application's, or the global ones).
struct SortNames: Sendable {
    var names: [RaveID: String]

    subscript(_ user: RaveID) -> String { names[user] ?? "" }
}

/// Friendships, follows and friend requests: every relationship is two edge rows (one per user) written in one
/// statement together with both users' counts, so both sides page from their own index prefix.
struct RelationshipStore: Sendable {
    let pool: PostgresPool

    /// Inserts the pair of rows (each with its peer's sort name) and bumps the count of each row actually inserted;
    /// returns one row per new edge.
    private static let insertEdges = PostgresStatement(
        name: "social_edges_insert_named",
        sql: """
            WITH inserted AS (
                INSERT INTO edges (list_id, owner_id, direction, peer_id, sort_name)
                VALUES ($1, $2, $3, $4, $6), ($1, $4, $5, $2, $7)
                ON CONFLICT DO NOTHING RETURNING list_id, owner_id, direction)
            INSERT INTO edge_counts (list_id, owner_id, direction, count)
            SELECT list_id, owner_id, direction, 1 FROM inserted
            ON CONFLICT (list_id, owner_id, direction) DO UPDATE SET count = edge_counts.count + 1
            RETURNING owner_id
            """)
    /// A follow in one round trip: the block, existing-edge and room checks and the insert of both rows with their
    /// counts, as one statement (the same read-committed checks the separate statements made, without five trips).
    private static let followInOneStatement = PostgresStatement(
        name: "social_follow",
        sql: """
            WITH blocked AS (
                SELECT 1 FROM blocks
                WHERE (blocker_id = $2 AND blocked_id = $4) OR (blocker_id = $4 AND blocked_id = $2)),
            present AS (SELECT 1 FROM edges WHERE list_id = $1 AND owner_id = $2 AND direction = $3 AND peer_id = $4),
            room AS (
                SELECT COALESCE((SELECT count FROM edge_counts WHERE list_id = $1 AND owner_id = $2 AND direction = $3), 0)
                    < $8 AS ok),
            inserted AS (
                INSERT INTO edges (list_id, owner_id, direction, peer_id, sort_name)
                SELECT * FROM (VALUES ($1::bigint, $2::uuid, $3::smallint, $4::uuid, $6::text), ($1, $4, $5, $2, $7)) AS v
                WHERE NOT EXISTS (SELECT 1 FROM blocked) AND NOT EXISTS (SELECT 1 FROM present) AND (SELECT ok FROM room)
                ON CONFLICT DO NOTHING RETURNING list_id, owner_id, direction),
            counted AS (
                INSERT INTO edge_counts (list_id, owner_id, direction, count)
                SELECT list_id, owner_id, direction, 1 FROM inserted
                ON CONFLICT (list_id, owner_id, direction) DO UPDATE SET count = edge_counts.count + 1
                RETURNING owner_id)
            SELECT EXISTS (SELECT 1 FROM blocked) AS blocked, EXISTS (SELECT 1 FROM present) AS present,
                (SELECT ok FROM room) AS room, (SELECT count(*) FROM counted) AS inserted
            """)
    private static let deleteEdges = PostgresStatement(
        name: "social_edges_delete",
        sql: """
            WITH deleted AS (
                DELETE FROM edges WHERE list_id = $1
                    AND ((owner_id = $2 AND direction = $3 AND peer_id = $4) OR (owner_id = $4 AND direction = $5 AND peer_id = $2))
                RETURNING list_id, owner_id, direction)
            UPDATE edge_counts c SET count = c.count - 1 FROM deleted d
            WHERE c.list_id = d.list_id AND c.owner_id = d.owner_id AND c.direction = d.direction
            RETURNING c.owner_id
            """)
    private static let selectCount = PostgresStatement(
        name: "social_edge_count",
        sql: "SELECT count FROM edge_counts WHERE list_id = $1 AND owner_id = $2 AND direction = $3")
    private static let selectEdge = PostgresStatement(
        name: "social_edge_exists",
        sql: "SELECT 1 FROM edges WHERE list_id = $1 AND owner_id = $2 AND direction = $3 AND peer_id = $4")
    /// Returns the new request's time; no row when the same request was already pending.
    private static let insertRequest = PostgresStatement(
        name: "social_request_insert_returning",
        sql: """
            INSERT INTO friend_requests (list_id, sender_id, recipient_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING
            RETURNING created_at
            """)
    private static let deleteRequest = PostgresStatement(
        name: "social_request_delete",
        sql: "DELETE FROM friend_requests WHERE list_id = $1 AND sender_id = $2 AND recipient_id = $3 RETURNING 1")
    private static let selectBlock = PostgresStatement(
        name: "social_block_between",
        sql: """
            SELECT blocker_id FROM blocks
            WHERE (blocker_id = $1 AND blocked_id = $2) OR (blocker_id = $2 AND blocked_id = $1)
            """)

    /// Tells every replica's `FriendIDCache` whose friends changed (`$1`: comma-separated ids, or `*` for everyone);
    /// PostgreSQL delivers it when the transaction commits, and not at all when it rolls back.
    private static let notifyFriendsChanged = PostgresStatement(
        name: "social_notify_friends", sql: "SELECT pg_notify('\(FriendIDCache.channel)', $1)")

    /// What `sendFriendRequest` did.
    enum RequestOutcome: Sendable {
        case sent
        case accepted
    }

    /// Records a request, or makes the two friends when `recipient` had already asked `sender`.
    ///
    /// Under both users' `RelationshipLocks`, so two users asking each other at once end as friends rather than as
    /// two crossed requests, and a crowd asking one player queues instead of failing.
    /// A new request publishes "social.friend_request_received" (key: the recipient) in the same transaction, so
    /// the event exists exactly when the request does; a repeated request publishes nothing.
    func sendFriendRequest(
        list: RelationshipList, sender: RaveID, recipient: RaveID, names: SortNames, appID: RaveID,
        senderDisplayName: String
    ) async throws -> RequestOutcome {
        try await pool.transaction(retryOnSerializationFailure: true) { transaction in
            try await RelationshipLocks.lock([sender, recipient], in: transaction)
            try await Self.requireNotBlocked(sender, recipient, in: transaction)
            if try await !transaction.execute(
                Self.selectEdge, [list.id, sender, EdgeDirection.friend.rawValue, recipient]
            )
            .isEmpty {
                throw SocialError.alreadyExists("you are already friends in list \"\(list.key)\"")
            }
            if try await !transaction.execute(Self.deleteRequest, [list.id, recipient, sender]).isEmpty {
                try await Self.befriend(sender, recipient, list: list, names: names, in: transaction)
                return .accepted
            }
            try await Self.requireRoom(for: sender, direction: .friend, list: list, in: transaction)
            // A repeated request changes nothing: the primary key keeps one pending request per pair.
            guard let inserted = try await transaction.execute(Self.insertRequest, [list.id, sender, recipient]).first
            else { return .sent }
            let event = SocialV1.FriendRequestReceivedEvent(
                appId: appID.hex, recipientId: recipient.hex, senderId: sender.hex,
                senderDisplayName: senderDisplayName,
                listId: list.key,
                sentAtUnixMs: try inserted.decode(PostgresTimestamp.self, column: "created_at").microsecondsSinceEpoch
                    / 1000)
            try await EventOutbox.publish(
                in: transaction, topic: EventTopic.friendRequestReceived, key: recipient.hex,
                payload: event.protobufBytes())
            return .sent
        }
    }

    /// Turns `sender`'s pending request to `recipient` into a friendship, under both users' `RelationshipLocks`.
    func acceptFriendRequest(
        list: RelationshipList, sender: RaveID, recipient: RaveID, names: SortNames
    ) async throws {
        try await pool.transaction(retryOnSerializationFailure: true) { transaction in
            try await RelationshipLocks.lock([sender, recipient], in: transaction)
            guard try await !transaction.execute(Self.deleteRequest, [list.id, sender, recipient]).isEmpty else {
                throw SocialError.notFound("no pending friend request from \(sender.hex) in list \"\(list.key)\"")
            }
            try await Self.requireNotBlocked(sender, recipient, in: transaction)
            try await Self.befriend(sender, recipient, list: list, names: names, in: transaction)
        }
    }

    /// Deletes a pending request; false when there was none.
    func deleteFriendRequest(list: RelationshipList, sender: RaveID, recipient: RaveID) async throws -> Bool {
        try await !pool.execute(Self.deleteRequest, [list.id, sender, recipient]).isEmpty
    }

    /// Ends a friendship; false when the two were not friends.
    func removeFriend(list: RelationshipList, user: RaveID, friend: RaveID) async throws -> Bool {
        let direction = EdgeDirection.friend.rawValue
        return try await pool.transaction { transaction in
            guard
                try await !transaction.execute(Self.deleteEdges, [list.id, user, direction, friend, direction]).isEmpty
            else { return false }
            try await Self.announceFriendsChanged(of: [user, friend], in: transaction)
            return true
        }
    }

    /// Makes `follower` follow `followee`; false when it already did.
    func follow(list: RelationshipList, follower: RaveID, followee: RaveID, names: SortNames) async throws -> Bool {
        let rows = try await pool.execute(
            Self.followInOneStatement,
            [
                list.id, follower, EdgeDirection.following.rawValue, followee, EdgeDirection.follower.rawValue,
                names[followee], names[follower], list.maxMembers,
            ])
        guard let row = rows.first else { throw PostgresError(.client, "the follow statement returned no row") }
        if try row.decode(Bool.self, column: "blocked") { throw SocialError.blocked }
        if try row.decode(Bool.self, column: "present") { return false }
        guard try row.decode(Bool.self, column: "room") else {
            throw SocialError.resourceExhausted(
                "user \(follower.hex) has reached the maximum of \(list.maxMembers) in list \"\(list.key)\"")
        }
        return try row.decode(Int64.self, column: "inserted") > 0
    }

    /// Ends a follow; false when there was none.
    func unfollow(list: RelationshipList, follower: RaveID, followee: RaveID) async throws -> Bool {
        try await !pool.execute(
            Self.deleteEdges,
            [list.id, follower, EdgeDirection.following.rawValue, followee, EdgeDirection.follower.rawValue]
        ).isEmpty
    }

    /// How many edges of `direction` the user has in the list.
    func count(list: RelationshipList, owner: RaveID, direction: EdgeDirection) async throws -> Int {
        let rows = try await pool.execute(Self.selectCount, [list.id, owner, direction.rawValue])
        return try Int(rows.first?.decode(Int32.self, column: "count") ?? 0)
    }

    // MARK: - Within a transaction

    private static func befriend(
        _ first: RaveID, _ second: RaveID, list: RelationshipList, names: SortNames, in transaction: PostgresTransaction
    ) async throws {
        try await requireRoom(for: first, direction: .friend, list: list, in: transaction)
        try await requireRoom(for: second, direction: .friend, list: list, in: transaction)
        let friend = EdgeDirection.friend.rawValue
        try await transaction.execute(
            insertEdges, [list.id, first, friend, second, friend, names[second], names[first]])
        try await announceFriendsChanged(of: [first, second], in: transaction)
    }

    /// Signals, at commit, that the friends of `owners` changed (nil: of anyone, after a merge).
    static func announceFriendsChanged(of owners: [RaveID]?, in transaction: PostgresTransaction) async throws {
        let payload = owners.map { $0.map(\.hex).joined(separator: ",") } ?? FriendIDCache.everyone
        try await transaction.execute(notifyFriendsChanged, [payload])
    }

    private static func requireRoom(
        for owner: RaveID, direction: EdgeDirection, list: RelationshipList, in transaction: PostgresTransaction
    ) async throws {
        let rows = try await transaction.execute(selectCount, [list.id, owner, direction.rawValue])
        let count = try Int(rows.first?.decode(Int32.self, column: "count") ?? 0)
        guard count < list.maxMembers else {
            throw SocialError.resourceExhausted(
                "user \(owner.hex) has reached the maximum of \(list.maxMembers) in list \"\(list.key)\"")
        }
    }

    static func requireNotBlocked(_ first: RaveID, _ second: RaveID, in transaction: PostgresTransaction) async throws {
        guard try await transaction.execute(selectBlock, [first, second]).isEmpty else { throw SocialError.blocked }
    }
}
