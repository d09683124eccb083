import RaveEvents
import RaveMessages
import RavePostgres

/// Gift requests: a player asks others for a gift of a requestable type; each recipient grants (sending the gift
/// back) or ignores it, once.
struct RequestStore: Sendable {
    let pool: PostgresPool
    let gifts: GiftStore

    private static let presented = """
        SELECT r.id, r.requester_id, r.recipient_id, r.state, r.requested_at, r.responded_at, r.gift_id,
            t.key AS type_key, t.name AS type_name, t.image_url
        FROM gift_requests r JOIN gift_types t ON t.id = r.gift_type_id
        """
    private static let insertRequests = PostgresStatement(
        name: "gifts_requests_insert",
        sql: """
            INSERT INTO gift_requests (id, app_id, gift_type_id, requester_id, recipient_id, requested_at)
            SELECT asked.id, $1, $2, $3, asked.recipient_id, $4::timestamptz
            FROM unnest($5::uuid[], $6::uuid[]) AS asked (id, recipient_id)
            """)
    private static let selectRequest = PostgresStatement(
        name: "gifts_requests_select", sql: "\(presented) WHERE r.id = $1 AND r.app_id = $2")
    private static let firstPage = PostgresStatement(
        name: "gifts_requests_first",
        sql: """
            \(presented) WHERE r.recipient_id = $1 AND r.app_id = $2 AND r.state = 0
            ORDER BY r.requested_at DESC, r.id DESC LIMIT $3
            """)
    private static let nextPage = PostgresStatement(
        name: "gifts_requests_next",
        sql: """
            \(presented) WHERE r.recipient_id = $1 AND r.app_id = $2 AND r.state = 0
                AND (r.requested_at, r.id) < ($4, $5)
            ORDER BY r.requested_at DESC, r.id DESC LIMIT $3
            """)
    /// The request and its gift type, locked so one grant wins.
    private static let lockRequest = PostgresStatement(
        name: "gifts_requests_lock",
        sql: """
            SELECT r.requester_id, r.recipient_id, r.state, t.id, t.app_id, t.key, t.name, t.image_url,
                t.requestable, t.expiry_seconds, t.daily_limit_per_sender
            FROM gift_requests r JOIN gift_types t ON t.id = r.gift_type_id
            WHERE r.id = $1 AND r.app_id = $2 FOR UPDATE OF r
            """)
    private static let markGranted = PostgresStatement(
        name: "gifts_requests_granted",
        sql: "UPDATE gift_requests SET state = 1, responded_at = now(), gift_id = $2 WHERE id = $1 AND state = 0")
    private static let markIgnored = PostgresStatement(
        name: "gifts_requests_ignored",
        sql: """
            UPDATE gift_requests SET state = 2, responded_at = now()
            WHERE id = $1 AND app_id = $2 AND recipient_id = $3 AND state = 0 RETURNING id
            """)

    /// Inserts one request per recipient and publishes one "gifts.requests_sent" event listing them (push fans it
    /// out per recipient); ids in recipient order.
    func request(
        _ type: GiftTypeRecord, from requester: RaveID, requesterName: String, to recipients: [RaveID],
        in transaction: PostgresTransaction
    ) async throws -> [RaveID] {
        guard !recipients.isEmpty else { return [] }
        let ids = recipients.map { _ in RaveID.random() }
        let now = PostgresTimestamp.now()
        try await transaction.execute(Self.insertRequests, [type.appID, type.id, requester, now, ids, recipients])
        let event = GiftsV1.GiftRequestsSentEvent(
            appId: type.appID.hex, requesterId: requester.hex, requesterDisplayName: requesterName,
            giftTypeKey: type.key, giftTypeName: type.name, requestedAtUnixMs: now.unixMilliseconds,
            requests: zip(ids, recipients).map { GiftsV1.SentGiftRequest(requestId: $0.hex, recipientId: $1.hex) })
        try await EventOutbox.publish(
            in: transaction, topic: EventTopic.giftRequestsSent, key: requester.hex, payload: event.protobufBytes())
        return ids
    }

    func request(_ id: RaveID, appID: RaveID) async throws -> GiftsV1.GiftRequest {
        guard let row = try await pool.execute(Self.selectRequest, [id, appID]).first else {
            throw GiftsError.notFound("no gift request \(id.hex) in this application")
        }
        return try Self.request(row)
    }

    func pending(
        to recipient: RaveID, appID: RaveID, limit: Int, after cursor: PageCursor?
    ) async throws -> (requests: [GiftsV1.GiftRequest], next: PageCursor?) {
        let rows =
            if let cursor {
                try await pool.execute(Self.nextPage, [recipient, appID, limit, cursor.time, cursor.id])
            } else {
                try await pool.execute(Self.firstPage, [recipient, appID, limit])
            }
        let requests = try rows.map(Self.request)
        guard requests.count == limit, let last = rows.last else { return (requests, nil) }
        let next = PageCursor(
            time: try last.decode(PostgresTimestamp.self, column: "requested_at"),
            id: try last.decode(RaveID.self, column: "id"))
        return (requests, next)
    }

    /// Sends the requested gift to the requester, once, as the request's recipient; the daily limit applies to
    /// the granting player like any send.
    ///
    /// `checkedRequester` is the requester the caller screened for blocks; a request whose requester is another
    /// one now (a merge in between) is ABORTED, to be retried with a fresh check.
    func grant(
        _ id: RaveID, by granter: RaveID, granterName: String, checkedRequester: RaveID?, appID: RaveID
    ) async throws -> (request: GiftsV1.GiftRequest, gift: GiftsV1.Gift) {
        let giftID = try await pool.transaction { transaction -> RaveID in
            guard let row = try await transaction.execute(Self.lockRequest, [id, appID]).first else {
                throw GiftsError.notFound("no gift request \(id.hex) in this application")
            }
            guard try row.decode(RaveID.self, column: "recipient_id") == granter else {
                throw GiftsError.permissionDenied("only the player asked for the gift may grant or ignore the request")
            }
            try Self.requirePending(try row.decode(Int32.self, column: "state"))
            let type = try GiftTypeStore.record(row)
            let requester = try row.decode(RaveID.self, column: "requester_id")
            guard requester == checkedRequester else {
                throw GiftsError.aborted("the gift request changed while it was granted; try again")
            }
            guard try await gifts.allowance(of: granter, for: type, wanted: 1, in: transaction) == 1 else {
                throw GiftsError.resourceExhausted(
                    "the daily limit of \(type.dailyLimitPerSender) \"\(type.key)\" gifts is reached; try tomorrow")
            }
            let sent = try await gifts.send(
                type, from: granter, senderName: granterName, to: [requester], grantingRequest: id, on: transaction)
            try await transaction.execute(Self.markGranted, [id, sent[0]])
            return sent[0]
        }
        return (try await request(id, appID: appID), try await gifts.gift(giftID, appID: appID))
    }

    func ignore(_ id: RaveID, by recipient: RaveID, appID: RaveID) async throws -> GiftsV1.GiftRequest {
        let changed = try await !pool.execute(Self.markIgnored, [id, appID, recipient]).isEmpty
        let request = try await request(id, appID: appID)
        guard !changed else { return request }
        guard request.recipientId == recipient.hex else {
            throw GiftsError.permissionDenied("only the player asked for the gift may grant or ignore the request")
        }
        try Self.requirePending(request.state == .granted ? 1 : 2)
        return request
    }

    private static func requirePending(_ state: Int32) throws(GiftsError) {
        switch state {
        case 0: return
        case 1: throw .failedPrecondition("the gift request was already granted")
        default: throw .failedPrecondition("the gift request was already ignored")
        }
    }

    static func request(_ row: PostgresRow) throws -> GiftsV1.GiftRequest {
        let state: GiftsV1.GiftRequestState =
            switch try row.decode(Int32.self, column: "state") {
            case 1: .granted
            case 2: .ignored
            default: .pending
            }
        return GiftsV1.GiftRequest(
            requestId: try row.decode(RaveID.self, column: "id").hex,
            giftTypeKey: try row.decode(String.self, column: "type_key"),
            giftTypeName: try row.decode(String.self, column: "type_name"),
            imageUrl: try row.decode(String.self, column: "image_url"),
            requesterId: try row.decode(RaveID.self, column: "requester_id").hex,
            recipientId: try row.decode(RaveID.self, column: "recipient_id").hex, state: state,
            requestedAtUnixMs: try row.decode(PostgresTimestamp.self, column: "requested_at").unixMilliseconds,
            respondedAtUnixMs: try row.decode(PostgresTimestamp?.self, column: "responded_at")?.unixMilliseconds ?? 0,
            giftId: try row.decode(RaveID?.self, column: "gift_id")?.hex ?? "")
    }
}
