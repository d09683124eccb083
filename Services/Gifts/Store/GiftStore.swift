import RaveEvents
import RaveMessages
import RavePostgres

/// Gifts: sending (inside a caller's transaction, with the daily limit and the received events), listing, and the
/// recipient's one answer.
struct GiftStore: Sendable {
    let pool: PostgresPool

    /// A gift joined with its type, as every read presents it; `expired` is computed by the database clock.
    private static let presented = """
        SELECT g.id, g.sender_id, g.recipient_id, g.state, g.sent_at, g.expires_at, g.responded_at, g.request_id,
            g.expires_at <= now() AS expired, t.key AS type_key, t.name AS type_name, t.image_url
        FROM gifts g JOIN gift_types t ON t.id = g.gift_type_id
        """
    private static let insertGifts = PostgresStatement(
        name: "gifts_insert",
        sql: """
            INSERT INTO gifts (id, app_id, gift_type_id, sender_id, recipient_id, sent_at, expires_at, request_id)
            SELECT sent.id, $1, $2, $3, sent.recipient_id, $4::timestamptz, $5::timestamptz, $6::uuid
            FROM unnest($7::uuid[], $8::uuid[]) AS sent (id, recipient_id)
            """)
    /// Counts `$3` more sends against the limit `$4` under the row lock, and says how many of them fit.
    private static let countDailySends = PostgresStatement(
        name: "gifts_daily_sends",
        sql: """
            INSERT INTO daily_sends (sender_id, gift_type_id, day, sent, granted)
            VALUES ($1, $2, (now() AT TIME ZONE 'UTC')::date, LEAST($3, $4), LEAST($3, $4))
            ON CONFLICT (sender_id, gift_type_id, day) DO UPDATE
            SET sent = LEAST(daily_sends.sent + $3, $4), granted = LEAST(daily_sends.sent + $3, $4) - daily_sends.sent
            RETURNING granted
            """)
    private static let selectGift = PostgresStatement(
        name: "gifts_select", sql: "\(presented) WHERE g.id = $1 AND g.app_id = $2")
    private static let firstPage = PostgresStatement(
        name: "gifts_pending_first",
        sql: """
            \(presented)
            WHERE g.recipient_id = $1 AND g.app_id = $2 AND g.state = 0 AND g.expires_at > now()
            ORDER BY g.sent_at DESC, g.id DESC LIMIT $3
            """)
    private static let nextPage = PostgresStatement(
        name: "gifts_pending_next",
        sql: """
            \(presented)
            WHERE g.recipient_id = $1 AND g.app_id = $2 AND g.state = 0 AND g.expires_at > now()
                AND (g.sent_at, g.id) < ($4, $5)
            ORDER BY g.sent_at DESC, g.id DESC LIMIT $3
            """)
    /// The recipient's answer: only while pending, and accepting only before expiry.
    private static let answer = PostgresStatement(
        name: "gifts_answer",
        sql: """
            UPDATE gifts g SET state = $4, responded_at = now()
            FROM gift_types t
            WHERE g.id = $1 AND g.app_id = $2 AND g.recipient_id = $3 AND g.state = 0
                AND ($4 <> 1 OR g.expires_at > now()) AND t.id = g.gift_type_id
            RETURNING g.id, g.sender_id, g.recipient_id, g.state, g.sent_at, g.expires_at, g.responded_at,
                g.request_id, false AS expired, t.key AS type_key, t.name AS type_name, t.image_url
            """)

    // MARK: - Sending

    /// How many of `wanted` sends of `type` the sender may still make today, counted in `transaction`.
    ///
    /// A rolled-back transaction gives its count back. Concurrent sends of one sender queue on the counter's row,
    /// so the limit holds.
    func allowance(
        of sender: RaveID, for type: GiftTypeRecord, wanted: Int, in transaction: PostgresTransaction
    ) async throws -> Int {
        guard type.dailyLimitPerSender > 0 else { return wanted }
        guard wanted > 0 else { return 0 }
        let rows = try await transaction.execute(
            Self.countDailySends, [sender, type.id, Int32(wanted), Int32(type.dailyLimitPerSender)])
        return try rows.first.map { Int(try $0.decode(Int32.self, column: "granted")) } ?? 0
    }

    /// Inserts one gift per recipient and publishes a "gifts.gift_received" event for each; returns the gift ids
    /// in recipient order.
    func send(
        _ type: GiftTypeRecord, from sender: RaveID, senderName: String, to recipients: [RaveID],
        grantingRequest requestID: RaveID? = nil, in transaction: PostgresTransaction
    ) async throws -> [RaveID] {
        guard !recipients.isEmpty else { return [] }
        let giftIDs = recipients.map { _ in RaveID.random() }
        let sentAt = PostgresTimestamp.now()
        let expiresAt = PostgresTimestamp(
            microsecondsSinceEpoch: sentAt.microsecondsSinceEpoch + type.expirySeconds * 1_000_000)
        try await transaction.execute(
            Self.insertGifts, [type.appID, type.id, sender, sentAt, expiresAt, requestID, giftIDs, recipients])
        let events = zip(giftIDs, recipients).map { giftID, recipient in
            let event = GiftsV1.GiftReceivedEvent(
                giftId: giftID.hex, appId: type.appID.hex, recipientId: recipient.hex, senderId: sender.hex,
                senderDisplayName: senderName, giftTypeKey: type.key, giftTypeName: type.name,
                sentAtUnixMs: sentAt.unixMilliseconds, expiresAtUnixMs: expiresAt.unixMilliseconds)
            return (key: recipient.hex, payload: event.protobufBytes())
        }
        try await EventBatch.publish(in: transaction, topic: EventTopic.giftReceived, events: events)
        return giftIDs
    }

    // MARK: - Reading

    /// A gift of the application, or NOT_FOUND.
    func gift(_ id: RaveID, appID: RaveID) async throws -> GiftsV1.Gift {
        guard let row = try await pool.execute(Self.selectGift, [id, appID]).first else {
            throw GiftsError.notFound("no gift \(id.hex) in this application")
        }
        return try Self.gift(row)
    }

    /// Pending, unexpired gifts to `recipient`, newest first, after `cursor`.
    func pending(
        to recipient: RaveID, appID: RaveID, limit: Int, after cursor: PageCursor?
    ) async throws -> (gifts: [GiftsV1.Gift], next: PageCursor?) {
        let rows =
            if let cursor {
                try await pool.execute(Self.nextPage, [recipient, appID, limit, cursor.time, cursor.id])
            } else {
                try await pool.execute(Self.firstPage, [recipient, appID, limit])
            }
        let gifts = try rows.map(Self.gift)
        guard gifts.count == limit, let last = rows.last else { return (gifts, nil) }
        let next = PageCursor(
            time: try last.decode(PostgresTimestamp.self, column: "sent_at"),
            id: try last.decode(RaveID.self, column: "id"))
        return (gifts, next)
    }

    // MARK: - Answering

    /// Accepts (and publishes "gifts.gift_accepted") or rejects a gift; the reasons a gift cannot be answered
    /// come back as their statuses.
    func answer(_ id: RaveID, accept: Bool, recipient: RaveID, appID: RaveID) async throws -> GiftsV1.Gift {
        let state: Int32 = accept ? 1 : 2
        let answered = try await pool.transaction { transaction -> GiftsV1.Gift? in
            guard let row = try await transaction.execute(Self.answer, [id, appID, recipient, state]).first else {
                return nil
            }
            let gift = try Self.gift(row)
            if accept {
                let event = GiftsV1.GiftAcceptedEvent(
                    giftId: gift.giftId, appId: appID.hex, recipientId: gift.recipientId, senderId: gift.senderId,
                    giftTypeKey: gift.giftTypeKey, acceptedAtUnixMs: gift.respondedAtUnixMs)
                try await EventOutbox.publish(
                    in: transaction, topic: EventTopic.giftAccepted, key: recipient.hex,
                    payload: event.protobufBytes())
            }
            return gift
        }
        if let answered { return answered }
        // Nothing changed: say why, from the gift as it is now.
        let gift = try await gift(id, appID: appID)
        guard gift.recipientId == recipient.hex else {
            throw GiftsError.permissionDenied("only the gift's recipient may accept or reject it")
        }
        switch gift.state {
        case .accepted: throw GiftsError.failedPrecondition("the gift was already accepted")
        case .rejected: throw GiftsError.failedPrecondition("the gift was already rejected")
        case .expired: throw GiftsError.failedPrecondition("the gift expired and can no longer be accepted")
        default: throw GiftsError.aborted("the gift changed while it was answered; try again")
        }
    }

    static func gift(_ row: PostgresRow) throws -> GiftsV1.Gift {
        let storedState = try row.decode(Int32.self, column: "state")
        let expired = try row.decode(Bool.self, column: "expired")
        let state: GiftsV1.GiftState =
            switch storedState {
            case 1: .accepted
            case 2: .rejected
            default: expired ? .expired : .pending
            }
        return GiftsV1.Gift(
            giftId: try row.decode(RaveID.self, column: "id").hex,
            giftTypeKey: try row.decode(String.self, column: "type_key"),
            giftTypeName: try row.decode(String.self, column: "type_name"),
            imageUrl: try row.decode(String.self, column: "image_url"),
            senderId: try row.decode(RaveID.self, column: "sender_id").hex,
            recipientId: try row.decode(RaveID.self, column: "recipient_id").hex, state: state,
            sentAtUnixMs: try row.decode(PostgresTimestamp.self, column: "sent_at").unixMilliseconds,
            expiresAtUnixMs: try row.decode(PostgresTimestamp.self, column: "expires_at").unixMilliseconds,
            respondedAtUnixMs: try row.decode(PostgresTimestamp?.self, column: "responded_at")?.unixMilliseconds ?? 0,
            requestId: try row.decode(RaveID?.self, column: "request_id")?.hex ?? "")
    }
}

extension PostgresTimestamp {
    /// Milliseconds since the Unix epoch, as the protocol carries times.
    var unixMilliseconds: Int64 { microsecondsSinceEpoch / 1_000 }
}
