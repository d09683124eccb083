import RaveMessages
import RavePostgres

/// Share-with-gift: gifts attached to invitations for people who do not play yet, delivered when they link the
/// invited provider account; and install links with click counts.
struct ShareStore: Sendable {
    let pool: PostgresPool
    let gifts: GiftStore

    /// One invitation to attach a gift to.
    struct Invitation: Sendable, Hashable {
        var subject: ExternalSubject
        var requestID: String
    }

    /// A pending external gift for a subject that just became a player.
    struct PendingDelivery: Sendable {
        var id: RaveID
        var sender: RaveID
        var type: GiftTypeRecord
    }

    private static let insertExternal = PostgresStatement(
        name: "gifts_external_insert",
        sql: """
            INSERT INTO external_gifts (id, app_id, gift_type_id, sender_id, provider, subject, request_id)
            SELECT x.id, $1, $2, $3, x.provider, x.subject, x.request_id
            FROM unnest($4::uuid[], $5::int4[], $6::text[], $7::text[]) AS x (id, provider, subject, request_id)
            ON CONFLICT (app_id, sender_id, provider, subject, request_id) DO NOTHING
            RETURNING id
            """)
    private static let deleteExternal = PostgresStatement(
        name: "gifts_external_delete", sql: "DELETE FROM external_gifts WHERE id = ANY($1::uuid[])")
    private static let markDelivered = PostgresStatement(
        name: "gifts_external_delivered",
        sql: """
            UPDATE external_gifts e SET state = 1, gift_id = d.gift_id, resolved_at = now()
            FROM unnest($1::uuid[], $2::uuid[]) AS d (id, gift_id) WHERE e.id = d.id AND e.state = 0
            """)
    private static let markReleased = PostgresStatement(
        name: "gifts_external_released",
        sql: "UPDATE external_gifts SET state = 2, resolved_at = now() WHERE id = ANY($1::uuid[]) AND state = 0")
    private static let lockPendingForSubject = PostgresStatement(
        name: "gifts_external_pending_subject",
        sql: """
            SELECT e.id AS external_id, e.sender_id, t.id, t.app_id, t.key, t.name, t.image_url, t.requestable,
                t.expiry_seconds, t.daily_limit_per_sender
            FROM external_gifts e JOIN gift_types t ON t.id = e.gift_type_id
            WHERE e.provider = $1 AND e.subject = $2 AND e.state = 0
            ORDER BY e.created_at, e.id FOR UPDATE OF e
            """)
    private static let pendingSendersForSubject = PostgresStatement(
        name: "gifts_external_senders",
        sql: "SELECT DISTINCT sender_id, app_id FROM external_gifts WHERE provider = $1 AND subject = $2 AND state = 0")
    private static let detach = PostgresStatement(
        name: "gifts_external_detach",
        sql: """
            UPDATE external_gifts e SET state = 2, resolved_at = now() FROM gift_types t
            WHERE e.app_id = $1 AND e.request_id = $2 AND e.state = 0 AND t.id = e.gift_type_id
            RETURNING t.key
            """)
    private static let fetch = PostgresStatement(
        name: "gifts_external_fetch",
        sql: """
            SELECT t.key, e.sender_id FROM external_gifts e JOIN gift_types t ON t.id = e.gift_type_id
            WHERE e.app_id = $1 AND e.request_id = $2 AND e.state = 0 AND ($3 = 0 OR e.provider = $3)
            ORDER BY e.created_at, e.id LIMIT 1
            """)
    private static let insertLink = PostgresStatement(
        name: "gifts_link_insert",
        sql: """
            INSERT INTO install_links (code, app_id, creator_id, gift_type_key, request_id, channel)
            VALUES ($1, $2, $3, $4, $5, $6)
            """)
    private static let clickLink = PostgresStatement(
        name: "gifts_link_click",
        sql: """
            UPDATE install_links SET clicks = clicks + 1 WHERE code = $1
            RETURNING app_id, gift_type_key, request_id, channel, clicks
            """)

    // MARK: - Attaching

    /// Records pending external gifts for `invitations`; returns the ids of those that were new (an invitation
    /// attached before by this sender is left as it was).
    func attach(
        _ type: GiftTypeRecord, from sender: RaveID, to invitations: [Invitation], in transaction: PostgresTransaction
    ) async throws -> [Invitation: RaveID] {
        guard !invitations.isEmpty else { return [:] }
        let ids = invitations.map { _ in RaveID.random() }
        let inserted = Set(
            try await transaction.execute(
                Self.insertExternal,
                [
                    type.appID, type.id, sender, ids, invitations.map(\.subject.provider),
                    invitations.map(\.subject.subject), invitations.map(\.requestID),
                ]
            ).map { try $0.decode(RaveID.self, column: "id") })
        var attached: [Invitation: RaveID] = [:]
        for (invitation, id) in zip(invitations, ids) where inserted.contains(id) { attached[invitation] = id }
        return attached
    }

    /// Removes attachments the daily limit did not allow.
    func remove(_ ids: [RaveID], in transaction: PostgresTransaction) async throws {
        guard !ids.isEmpty else { return }
        try await transaction.execute(Self.deleteExternal, [ids])
    }

    /// Marks external gifts as delivered as the given gifts.
    func markDelivered(
        _ deliveries: [(external: RaveID, gift: RaveID)], in transaction: PostgresTransaction
    )
        async throws
    {
        guard !deliveries.isEmpty else { return }
        try await transaction.execute(Self.markDelivered, [deliveries.map(\.external), deliveries.map(\.gift)])
    }

    // MARK: - Delivering on a provider link

    /// Who sent pending external gifts to `subject`, per application (read before the delivery transaction, so
    /// the senders' names can be asked without holding it open).
    func pendingSenders(of subject: ExternalSubject) async throws -> [(sender: RaveID, appID: RaveID)] {
        try await pool.execute(Self.pendingSendersForSubject, [subject.provider, subject.subject]).map {
            (try $0.decode(RaveID.self, column: "sender_id"), try $0.decode(RaveID.self, column: "app_id"))
        }
    }

    /// Turns every pending external gift for `subject` into a normal gift to `user`; returns how many.
    ///
    /// Exactly once: the rows are locked and leave the pending state in the same transaction.
    func deliverPending(
        for subject: ExternalSubject, to user: RaveID, senderNames: [RaveID: String],
        in transaction: PostgresTransaction
    ) async throws -> Int {
        let pending = try await transaction.execute(Self.lockPendingForSubject, [subject.provider, subject.subject])
            .map { row in
                PendingDelivery(
                    id: try row.decode(RaveID.self, column: "external_id"),
                    sender: try row.decode(RaveID.self, column: "sender_id"), type: try GiftTypeStore.record(row))
            }
        var delivered: [(external: RaveID, gift: RaveID)] = []
        var released: [RaveID] = []
        for delivery in pending {
            // An invitation the new player sent to their own other account gives them nothing.
            guard delivery.sender != user else {
                released.append(delivery.id)
                continue
            }
            let giftIDs = try await gifts.send(
                delivery.type, from: delivery.sender, senderName: senderNames[delivery.sender] ?? "", to: [user],
                on: transaction)
            delivered.append((delivery.id, giftIDs[0]))
        }
        try await markDelivered(delivered, in: transaction)
        if !released.isEmpty { try await transaction.execute(Self.markReleased, [released]) }
        return delivered.count
    }

    // MARK: - The invited person's side

    /// Releases the pending gifts of an external request; returns the gift type key and how many were released,
    /// or NOT_FOUND when none is pending.
    func detach(requestID: String, appID: RaveID) async throws -> (key: String, count: Int) {
        let rows = try await pool.execute(Self.detach, [appID, requestID])
        guard let first = rows.first else {
            throw GiftsError.notFound("no pending gift is attached to request \"\(requestID.prefix(64))\"")
        }
        return (try first.decode(String.self, column: "key"), rows.count)
    }

    /// The gift type key and sender of a pending external gift, or NOT_FOUND.
    func fetch(requestID: String, provider: Int32, appID: RaveID) async throws -> (key: String, sender: RaveID) {
        guard let row = try await pool.execute(Self.fetch, [appID, requestID, provider]).first else {
            throw GiftsError.notFound("no pending gift is attached to request \"\(requestID.prefix(64))\"")
        }
        return (try row.decode(String.self, column: "key"), try row.decode(RaveID.self, column: "sender_id"))
    }

    // MARK: - Install links

    func createLink(
        appID: RaveID, creator: RaveID, giftTypeKey: String, requestID: String, channel: String
    ) async throws -> String {
        let code = InstallCode.random()
        try await pool.execute(Self.insertLink, [code, appID, creator, giftTypeKey, requestID, channel])
        return code
    }

    /// Counts the click; NOT_FOUND for an unknown code.
    func resolveLink(_ code: String) async throws -> GiftsV1.ResolveInstallLinkResponse {
        guard let row = try await pool.execute(Self.clickLink, [code]).first else {
            throw GiftsError.notFound("no install link has this code")
        }
        return GiftsV1.ResolveInstallLinkResponse(
            appId: try row.decode(RaveID.self, column: "app_id").hex,
            giftTypeKey: try row.decode(String.self, column: "gift_type_key"),
            requestId: try row.decode(String.self, column: "request_id"),
            channel: try row.decode(String.self, column: "channel"),
            clicks: UInt64(clamping: try row.decode(Int64.self, column: "clicks")))
    }
}
