import RaveMerges
import RaveMessages
import RavePostgres

/// Reads an exported account's devices, deliveries and inbox (docs/push.md, "Exporting an account"): the same rows
/// an erasure of the user erases or anonymises, less the stored send requests, which name the other recipients
/// (an inbox entry carries its notification's texts instead).
enum ExportStore {
    private static let platform = "CASE platform WHEN 1 THEN 'apns' WHEN 2 THEN 'fcm' ELSE 'unknown' END AS platform"

    /// The sections, in page order.
    static let sections: [ExportSection] = [
        ExportSection(
            "device_tokens", service: "push",
            sql: """
                SELECT token_id, app_id, user_id, \(platform), token, sandbox, consent_push, consent_advertising,
                       consent_night_advertising, option_foreground, option_badge, option_sound, country, language,
                       time_zone, registered_at
                FROM device_tokens WHERE user_id = ANY($1::uuid[])
                """,
            keys: [.id("token_id")]
        ) { row in
            var record = ExportRecord()
            record.id("token_id", try row.decode(column: "token_id"))
            record.string("app_id", try row.decode(column: "app_id"))
            record.id("user_id", try row.decode(column: "user_id"))
            record.enumeration("platform", try row.decode(column: "platform"))
            record.string("token", try row.decode(column: "token"))
            for column in [
                "sandbox", "consent_push", "consent_advertising", "consent_night_advertising", "option_foreground",
                "option_badge", "option_sound",
            ] {
                record.bool(column, try row.decode(column: column))
            }
            for column in ["country", "language", "time_zone"] { record.string(column, try row.decode(column: column)) }
            record.time("registered_at", try row.decode(column: "registered_at"))
            return record
        },
        ExportSection(
            "deliveries", service: "push",
            sql: """
                SELECT notification_id, token_id, user_id, \(platform), token, sandbox,
                       CASE state WHEN 1 THEN 'pending' WHEN 2 THEN 'held' WHEN 3 THEN 'delivered' WHEN 4 THEN 'failed'
                                  WHEN 5 THEN 'expired' ELSE 'skipped' END AS state,
                       attempts::bigint AS attempts, next_attempt_at, last_result, updated_at
                FROM deliveries WHERE user_id = ANY($1::uuid[])
                """,
            keys: [.id("notification_id"), .id("token_id")]
        ) { row in
            var record = ExportRecord()
            record.id("notification_id", try row.decode(column: "notification_id"))
            record.id("token_id", try row.decode(column: "token_id"))
            record.id("user_id", try row.decode(column: "user_id"))
            record.enumeration("platform", try row.decode(column: "platform"))
            record.string("token", try row.decode(column: "token"))
            record.bool("sandbox", try row.decode(column: "sandbox"))
            record.enumeration("state", try row.decode(column: "state"))
            record.int("attempts", Int(try row.decode(Int64.self, column: "attempts")))
            record.time("next_attempt_at", try row.decode(column: "next_attempt_at"))
            record.string("last_result", try row.decode(column: "last_result"))
            record.time("updated_at", try row.decode(column: "updated_at"))
            return record
        },
        ExportSection(
            "inbox", service: "push",
            sql: """
                SELECT e.user_id, e.notification_id, e.app_id, e.read, e.created_at, n.request
                FROM inbox_entries e JOIN notifications n USING (notification_id)
                WHERE e.user_id = ANY($1::uuid[])
                """,
            keys: [.id("user_id"), .id("notification_id")]
        ) { row in
            let request = try PushV1.SendNotificationRequest(
                protobufBytes: try row.decode([UInt8].self, column: "request"))
            let notification = request.notification ?? PushV1.Notification()
            var record = ExportRecord()
            record.id("user_id", try row.decode(column: "user_id"))
            record.id("notification_id", try row.decode(column: "notification_id"))
            record.string("app_id", try row.decode(column: "app_id"))
            record.string("title", notification.title)
            record.string("body", notification.body)
            record.stringMap("data", notification.data.map { ($0.key, $0.value) })
            record.enumeration("category", notification.category == .advertising ? "advertising" : "normal")
            record.bool("read", try row.decode(column: "read"))
            record.time("created_at", try row.decode(column: "created_at"))
            return record
        },
        ExportSection.merges(
            service: "push", table: "merges", source: "source_user_id", target: "target_user_id", time: nil),
    ]
}
