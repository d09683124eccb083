import RaveEvents
import RaveMessages
import RaveOutbox
import RavePostgres

/// Gifts: sending (inside a caller's transaction, with the daily limit and the received events), listing, and the
/// recipient's one answer.
struct GiftStore: Sendable {
    let pool: PostgresPool

    /// A gift joined with its type, as every read presents it; `expired` is computed by the database clock.
    static let presented = """
        SELECT g.id, g.sender_id, g.recipient_id, g.state, g.sent_at, g.expires_at, g.responded_at, g.request_id,
            g.expires_at <= now() AS expired, t.key AS type_key, t.name AS type_name, t.image_url
        FROM gifts g JOIN gift_types t ON t.id = g.gift_type_id
        """
    /// A whole send in one statement.
    ///
    /// The gifts, their one "gifts.gifts_sent" outbox row (push fans it out per recipient) and the idempotency
    /// record when there is one. When the key already has a record the statement changes nothing and returns a
    /// row; a key taken by a concurrent call fails the statement on the primary key, so nothing of it takes effect
    /// either. No NOTIFY: a notifying commit waits for every other notifying commit, so the outbox's wake-up
    /// notifies after the commit (`OutboxWakeup`).
    private static let insertGifts = PostgresStatement(
        name: "gifts_send_checked",
        sql: """
            WITH prior AS (
                SELECT 1 FROM idempotent_calls WHERE sender_id = $3 AND operation = $13 AND idempotency_key = $14
            ), sent AS (
                INSERT INTO gifts (id, app_id, gift_type_id, sender_id, recipient_id, sent_at, expires_at, request_id)
                SELECT s.id, $1, $2, $3, s.recipient_id, $4::timestamptz, $5::timestamptz, $6::uuid
                FROM unnest($7::uuid[], $8::uuid[]) AS s (id, recipient_id)
                WHERE NOT EXISTS (SELECT FROM prior)
            ), event AS (
                INSERT INTO outbox_events (event_id, topic, key, payload)
                SELECT $9, $10, $11, $12 WHERE NOT EXISTS (SELECT FROM prior)
            ), recorded AS (
                INSERT INTO idempotent_calls (sender_id, operation, idempotency_key, fingerprint, response)
                SELECT $3, $13, $14, $15, $16 WHERE $13::text IS NOT NULL AND NOT EXISTS (SELECT FROM prior)
            )
            SELECT true AS replayed FROM prior
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
    private static let answered = """
        g.id, g.sender_id, g.recipient_id, g.state, g.sent_at, g.expires_at, g.responded_at, g.request_id,
        false AS expired, t.key AS type_key, t.name AS type_name, t.image_url
        """
    /// The recipient's rejection: only while pending.
    private static let reject = PostgresStatement(
        name: "gifts_reject",
        sql: """
            UPDATE gifts g SET state = 2, responded_at = now()
            FROM gift_types t
            WHERE g.id = $1 AND g.app_id = $2 AND g.recipient_id = $3 AND g.state = 0 AND t.id = g.gift_type_id
            RETURNING \(answered)
            """)
    /// The recipient's acceptance with its "gifts.gift_accepted" outbox row, in one statement: only while pending
    /// and before expiry (by the database clock).
    ///
    /// No NOTIFY: `answer` asks the outbox's wake-up after the commit.
    ///
    /// The event's payload is the caller's encoding of the fields it knows (`$8`: gift, app, recipient, time)
    /// followed by fields 4 (sender id, 32 hex digits) and 5 (type key) encoded here from the updated row.
    /// Protocol buffers merge concatenated encodings, so consumers decode one GiftAcceptedEvent.
    private static let accept = PostgresStatement(
        name: "gifts_accept",
        sql: """
            WITH accepted AS (
                UPDATE gifts g SET state = 1, responded_at = $4
                FROM gift_types t
                WHERE g.id = $1 AND g.app_id = $2 AND g.recipient_id = $3 AND g.state = 0 AND g.expires_at > now()
                    AND t.id = g.gift_type_id
                RETURNING \(answered)
            ), event AS (
                INSERT INTO outbox_events (event_id, topic, key, payload)
                SELECT $5, $6, $7, $8 || '\\x2220'::bytea || convert_to(replace(a.sender_id::text, '-', ''), 'UTF8')
                    || '\\x2a'::bytea
                    || CASE WHEN k.length < 128 THEN set_byte('\\x00'::bytea, 0, k.length)
                        ELSE set_byte(set_byte('\\x0000'::bytea, 0, k.length % 128 + 128), 1, k.length / 128) END
                    || convert_to(a.type_key, 'UTF8')
                FROM accepted a, LATERAL (SELECT octet_length(a.type_key) AS length) k
            )
            SELECT a.* FROM accepted a
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

    /// Inserts one gift per recipient and publishes one "gifts.gifts_sent" event listing them, in one statement on
    /// `database` (a transaction, or the pool for a send that is a transaction by itself); returns the gift ids in
    /// recipient order.
    ///
    /// `giftIDs` (one per recipient, random by default) lets a caller build its response before the send, so that
    /// `record` (the idempotency record holding that response) commits with the gifts. When another call holds
    /// the record's key (before or concurrently), the send fails with `concurrentReplay` and none of it takes
    /// effect.
    ///
    /// The outbox's dispatchers are woken after the commit: the transaction's, or the statement's own on the pool.
    @discardableResult
    func send(
        _ type: GiftTypeRecord, from sender: RaveID, senderName: String, to recipients: [RaveID],
        giftIDs chosenIDs: [RaveID]? = nil, grantingRequest requestID: RaveID? = nil,
        recording record: IdempotentCalls.Record? = nil, on database: some PostgresQueryable
    ) async throws -> [RaveID] {
        // RavePostgres encodes an empty array as an empty bytea (`[] as? [UInt8]` succeeds), which a `uuid[]`
        // parameter rejects; a send to nobody only records its result.
        guard !recipients.isEmpty else {
            if let record, try await !IdempotentCalls.record(record, sender: sender, on: database) {
                throw GiftsError.concurrentReplay
            }
            return []
        }
        let giftIDs = chosenIDs ?? recipients.map { _ in RaveID.random() }
        precondition(giftIDs.count == recipients.count, "one gift id per recipient")
        let sentAt = PostgresTimestamp.now()
        let expiresAt = PostgresTimestamp(
            microsecondsSinceEpoch: sentAt.microsecondsSinceEpoch + type.expirySeconds * 1_000_000)
        let event = GiftsV1.GiftsSentEvent(
            appId: type.appID.hex, senderId: sender.hex, senderDisplayName: senderName, giftTypeKey: type.key,
            giftTypeName: type.name, sentAtUnixMs: sentAt.unixMilliseconds,
            expiresAtUnixMs: expiresAt.unixMilliseconds,
            gifts: zip(giftIDs, recipients).map { GiftsV1.SentGift(giftId: $0.hex, recipientId: $1.hex) })
        // In a transaction the wake-up waits for its commit; a statement on the pool has committed when it returns.
        let transaction = database as? PostgresTransaction
        if let transaction { try await Outbox.wakeDispatchers(after: transaction) }
        let replayed: Bool
        do {
            replayed = try await !database.execute(
                Self.insertGifts,
                [
                    type.appID, type.id, sender, sentAt, expiresAt, requestID, giftIDs, recipients, RaveID.random(),
                    EventTopic.giftsSent, sender.hex, event.protobufBytes(), record?.operation.rawValue, record?.key,
                    record?.fingerprint, record?.response,
                ]
            ).isEmpty
        } catch let error as PostgresError
            where error.sqlState == "23505" && error.constraint == "idempotent_calls_pkey"
        {
            throw GiftsError.concurrentReplay
        }
        if replayed { throw GiftsError.concurrentReplay }
        if transaction == nil { Outbox.eventsCommitted(on: pool) }
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

    /// Accepts (and publishes "gifts.gift_accepted") or rejects a gift, each in one statement; the reasons a gift
    /// cannot be answered come back as their statuses.
    func answer(_ id: RaveID, accept: Bool, recipient: RaveID, appID: RaveID) async throws -> GiftsV1.Gift {
        let answered: GiftsV1.Gift?
        if accept {
            // The application's clock stamps the answer (as it stamps sends), so the event can be encoded here.
            let acceptedAt = PostgresTimestamp.now()
            let known = GiftsV1.GiftAcceptedEvent(
                giftId: id.hex, appId: appID.hex, recipientId: recipient.hex,
                acceptedAtUnixMs: acceptedAt.unixMilliseconds)
            answered = try await pool.execute(
                Self.accept,
                [
                    id, appID, recipient, acceptedAt, RaveID.random(), EventTopic.giftAccepted, recipient.hex,
                    known.protobufBytes(),
                ]
            ).first.map(Self.gift)
            if answered != nil { Outbox.eventsCommitted(on: pool) }
        } else {
            answered = try await pool.execute(Self.reject, [id, appID, recipient]).first.map(Self.gift)
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
