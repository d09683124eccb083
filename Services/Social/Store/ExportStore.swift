import RaveMerges
import RavePostgres

/// Reads an exported account's graph (docs/social.md, "Exporting an account"): the same rows an erasure of the user
/// erases or anonymises, less other users' private ones (their blocks of the user, their contact books).
enum ExportStore {
    /// The sections, in page order.
    static let sections: [ExportSection] = [
        edges("friends", direction: 0), edges("following", direction: 1), edges("followers", direction: 2),
        ExportSection(
            "friend_requests", service: "social",
            sql: """
                SELECT r.list_id, l.key AS list_key, l.app_id, r.sender_id, r.recipient_id, r.created_at,
                       r.sender_id = ANY($1::uuid[]) AS sent
                FROM friend_requests r JOIN lists l USING (list_id)
                WHERE r.sender_id = ANY($1::uuid[]) OR r.recipient_id = ANY($1::uuid[])
                """,
            keys: [.integer("list_id"), .id("sender_id"), .id("recipient_id")]
        ) { row in
            var record = ExportRecord()
            record.string("list_key", try row.decode(column: "list_key"))
            record.id("app_id", try row.decode(column: "app_id"))
            record.enumeration("direction", try row.decode(Bool.self, column: "sent") ? "sent" : "received")
            record.id("sender_id", try row.decode(column: "sender_id"))
            record.id("recipient_id", try row.decode(column: "recipient_id"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        ExportSection(
            "blocks", service: "social",
            sql: "SELECT blocker_id, blocked_id, created_at FROM blocks WHERE blocker_id = ANY($1::uuid[])",
            keys: [.id("blocker_id"), .id("blocked_id")]
        ) { row in
            var record = ExportRecord()
            record.id("user_id", try row.decode(column: "blocker_id"))
            record.id("blocked_id", try row.decode(column: "blocked_id"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        ExportSection(
            "contacts", service: "social",
            sql: """
                SELECT c.owner_id, c.contact_key, c.user_id, c.display_name, c.picture_url, c.created_at,
                       coalesce(s.source, 0)::bigint AS source, coalesce(s.third_party, '') AS third_party,
                       coalesce(s.external_id, '') AS external_id, s.source IS NULL AS unsourced
                FROM contacts c
                LEFT JOIN contact_sources s ON s.owner_id = c.owner_id AND s.contact_key = c.contact_key
                WHERE c.owner_id = ANY($1::uuid[])
                """,
            keys: [
                .id("owner_id"), .text("contact_key"), .integer("source"), .text("third_party"), .text("external_id"),
            ]
        ) { row in
            var record = ExportRecord()
            record.id("user_id", try row.decode(column: "owner_id"))
            record.string("contact_key", try row.decode(column: "contact_key"))
            record.id("matched_user_id", try row.decode(column: "user_id"))
            record.string("display_name", try row.decode(column: "display_name"))
            record.string("picture_url", try row.decode(column: "picture_url"))
            let unsourced = try row.decode(Bool.self, column: "unsourced")
            record.string("source", unsourced ? nil : sourceName(try row.decode(column: "source")))
            record.string("third_party", unsourced ? nil : try row.decode(String.self, column: "third_party"))
            record.string("external_id", unsourced ? nil : try row.decode(String.self, column: "external_id"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        ExportSection.merges(service: "social", table: "applied_merges", source: "source_id", target: "target_id"),
    ]

    /// The relationships of one direction the ids hold, on every list (each relationship's other row, the peer's,
    /// is the same relationship seen from the other side).
    private static func edges(_ name: String, direction: Int) -> ExportSection {
        ExportSection(
            name, service: "social",
            sql: """
                SELECT e.list_id, l.key AS list_key, l.app_id, e.owner_id, e.peer_id, e.created_at
                FROM edges e JOIN lists l USING (list_id)
                WHERE e.owner_id = ANY($1::uuid[]) AND e.direction = \(direction)
                """,
            keys: [.integer("list_id"), .id("owner_id"), .id("peer_id")]
        ) { row in
            var record = ExportRecord()
            record.string("list_key", try row.decode(column: "list_key"))
            record.id("app_id", try row.decode(column: "app_id"))
            record.id("user_id", try row.decode(column: "owner_id"))
            record.id("peer_id", try row.decode(column: "peer_id"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        }
    }

    /// `ContactSource`'s values as the export spells them.
    private static func sourceName(_ value: Int64) -> String {
        switch value {
        case 1: "rave"
        case 2: "facebook"
        case 3: "google"
        case 4: "phonebook"
        case 5: "third_party"
        default: "unknown"
        }
    }
}
