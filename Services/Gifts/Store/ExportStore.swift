import RaveMerges
import RavePostgres

/// Reads an exported account's gifts (docs/gifts.md, "Exporting an account"): the same rows an erasure of the user
/// erases or anonymises, less other users' idempotency records of calls that named the user (theirs, not the user's).
enum ExportStore {
    /// The sections, in page order.
    static let sections: [ExportSection] = [
        gifts("gifts_sent", column: "sender_id"), gifts("gifts_received", column: "recipient_id"),
        ExportSection(
            "gift_requests", service: "gifts",
            sql: """
                SELECT r.id, r.app_id, t.key AS gift_type_key, r.requester_id, r.recipient_id,
                       CASE WHEN r.requester_id = ANY($1::uuid[]) THEN 'made' ELSE 'received' END AS direction,
                       CASE r.state WHEN 0 THEN 'pending' WHEN 1 THEN 'granted' ELSE 'ignored' END AS state,
                       r.requested_at, r.responded_at, r.gift_id
                FROM gift_requests r JOIN gift_types t ON t.id = r.gift_type_id
                WHERE r.requester_id = ANY($1::uuid[]) OR r.recipient_id = ANY($1::uuid[])
                """,
            keys: [.id("id")]
        ) { row in
            var record = ExportRecord()
            record.id("request_id", try row.decode(column: "id"))
            record.id("app_id", try row.decode(column: "app_id"))
            record.string("gift_type_key", try row.decode(column: "gift_type_key"))
            record.enumeration("direction", try row.decode(column: "direction"))
            record.id("requester_id", try row.decode(column: "requester_id"))
            record.id("recipient_id", try row.decode(column: "recipient_id"))
            record.enumeration("state", try row.decode(column: "state"))
            record.time("requested_at", try row.decode(column: "requested_at"))
            record.time("responded_at", try row.decode(column: "responded_at"))
            record.id("gift_id", try row.decode(column: "gift_id"))
            return record
        },
        ExportSection(
            "share_invitations", service: "gifts",
            sql: """
                SELECT e.id, e.app_id, t.key AS gift_type_key, e.sender_id,
                       CASE e.provider WHEN 1 THEN 'google' WHEN 2 THEN 'apple' WHEN 3 THEN 'facebook' ELSE 'unknown' END
                           AS provider,
                       e.subject, e.request_id,
                       CASE e.state WHEN 0 THEN 'pending' WHEN 1 THEN 'delivered' ELSE 'detached' END AS state,
                       e.created_at, e.resolved_at, e.gift_id
                FROM external_gifts e JOIN gift_types t ON t.id = e.gift_type_id
                WHERE e.sender_id = ANY($1::uuid[])
                """,
            keys: [.id("id")]
        ) { row in
            var record = ExportRecord()
            record.id("invitation_id", try row.decode(column: "id"))
            record.id("app_id", try row.decode(column: "app_id"))
            record.string("gift_type_key", try row.decode(column: "gift_type_key"))
            record.id("sender_id", try row.decode(column: "sender_id"))
            record.enumeration("provider", try row.decode(column: "provider"))
            record.string("subject", try row.decode(column: "subject"))
            record.string("provider_request_id", try row.decode(column: "request_id"))
            record.enumeration("state", try row.decode(column: "state"))
            record.time("created_at", try row.decode(column: "created_at"))
            record.time("resolved_at", try row.decode(column: "resolved_at"))
            record.id("gift_id", try row.decode(column: "gift_id"))
            return record
        },
        ExportSection(
            "share_links", service: "gifts",
            sql: """
                SELECT code, app_id, creator_id, gift_type_key, request_id, channel, clicks, created_at
                FROM install_links WHERE creator_id = ANY($1::uuid[])
                """,
            keys: [.text("code")]
        ) { row in
            var record = ExportRecord()
            record.string("code", try row.decode(column: "code"))
            record.id("app_id", try row.decode(column: "app_id"))
            record.id("creator_id", try row.decode(column: "creator_id"))
            record.string("gift_type_key", try row.decode(column: "gift_type_key"))
            record.string("request_id", try row.decode(column: "request_id"))
            record.string("channel", try row.decode(column: "channel"))
            record.int64("clicks", try row.decode(column: "clicks"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        // The day through to_char, not ::text, which follows the session's DateStyle ("04/03/2026" under SQL, DMY).
        ExportSection(
            "daily_sends", service: "gifts",
            sql: """
                SELECT d.sender_id, d.gift_type_id, t.app_id, t.key AS gift_type_key,
                       to_char(d.day, 'YYYY-MM-DD') AS day,
                       d.sent::bigint AS sent, d.granted::bigint AS granted
                FROM daily_sends d JOIN gift_types t ON t.id = d.gift_type_id
                WHERE d.sender_id = ANY($1::uuid[])
                """,
            keys: [.id("sender_id"), .integer("gift_type_id"), .text("day")]
        ) { row in
            var record = ExportRecord()
            record.id("sender_id", try row.decode(column: "sender_id"))
            record.id("app_id", try row.decode(column: "app_id"))
            record.string("gift_type_key", try row.decode(column: "gift_type_key"))
            record.string("day", try row.decode(column: "day"))
            record.int("sent", Int(try row.decode(Int64.self, column: "sent")))
            record.int("granted", Int(try row.decode(Int64.self, column: "granted")))
            return record
        },
        ExportSection(
            "idempotency_records", service: "gifts",
            sql: """
                SELECT sender_id, operation, idempotency_key, fingerprint, response, created_at
                FROM idempotent_calls WHERE sender_id = ANY($1::uuid[])
                """,
            keys: [.id("sender_id"), .text("operation"), .text("idempotency_key")]
        ) { row in
            var record = ExportRecord()
            record.id("sender_id", try row.decode(column: "sender_id"))
            record.string("operation", try row.decode(column: "operation"))
            record.string("idempotency_key", try row.decode(column: "idempotency_key"))
            record.bytes("fingerprint", try row.decode(column: "fingerprint"))
            record.bytes("response", try row.decode(column: "response"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        ExportSection.merges(service: "gifts", table: "applied_merges", source: "source_id", target: "target_id"),
    ]

    /// The gifts the ids sent or received (`column`), with the type's key; a pending gift past its expiry reads
    /// "expired", as `GetGift` says.
    private static func gifts(_ name: String, column: String) -> ExportSection {
        ExportSection(
            name, service: "gifts",
            sql: """
                SELECT g.id, g.app_id, t.key AS gift_type_key, g.sender_id, g.recipient_id,
                       CASE WHEN g.state = 1 THEN 'accepted' WHEN g.state = 2 THEN 'rejected'
                            WHEN g.expires_at <= now() THEN 'expired' ELSE 'pending' END AS state,
                       g.sent_at, g.expires_at, g.responded_at, g.request_id
                FROM gifts g JOIN gift_types t ON t.id = g.gift_type_id
                WHERE g.\(column) = ANY($1::uuid[])
                """,
            keys: [.id("id")]
        ) { row in
            var record = ExportRecord()
            record.id("gift_id", try row.decode(column: "id"))
            record.id("app_id", try row.decode(column: "app_id"))
            record.string("gift_type_key", try row.decode(column: "gift_type_key"))
            record.id("sender_id", try row.decode(column: "sender_id"))
            record.id("recipient_id", try row.decode(column: "recipient_id"))
            record.enumeration("state", try row.decode(column: "state"))
            record.time("sent_at", try row.decode(column: "sent_at"))
            record.time("expires_at", try row.decode(column: "expires_at"))
            record.time("responded_at", try row.decode(column: "responded_at"))
            record.id("request_id", try row.decode(column: "request_id"))
            return record
        }
    }
}
