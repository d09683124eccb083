import Foundation
import RaveMessages
import RavePostgres

/// A delivery a worker has claimed.
struct ClaimedDelivery: Sendable {
    var notificationID: RaveID
    var tokenID: RaveID
    var platform: PushV1.Platform
    var push: OutgoingPush
    /// Including the one about to be made.
    var attempts: Int
    /// False when the token was unregistered, or moved to another user, after the notification was sent.
    var stillRegistered: Bool
}

/// The delivery queue: due rows are claimed under a lease, and each attempt's outcome is written back.
struct DeliveryStore: Sendable {
    // The request (with up to 1000 recipients) comes once per notification, not once per row: a fan-out batch
    // would otherwise carry it a thousand times.
    // The lease pushes next_attempt_at forward, so a worker that dies mid-attempt leaves the row due again
    // once the lease ends: a restart resumes it (at-least-once delivery).
    static let claim = PostgresStatement(
        name: "push_claim_deliveries",
        sql: """
            WITH due AS (
                SELECT notification_id, token_id FROM deliveries
                WHERE state IN (1, 2) AND next_attempt_at <= $1
                ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED),
            claimed AS (
                UPDATE deliveries d SET state = 1, attempts = d.attempts + 1, next_attempt_at = $2, updated_at = $1
                FROM due WHERE d.notification_id = due.notification_id AND d.token_id = due.token_id
                RETURNING d.notification_id, d.token_id, d.platform, d.token, d.sandbox, d.attempts, d.user_id)
            SELECT c.notification_id, c.token_id, c.platform, c.token, c.sandbox, c.attempts, n.expires_at,
                CASE WHEN row_number() OVER (PARTITION BY c.notification_id) = 1 THEN n.request END,
                t.token_id IS NOT NULL, coalesce(t.option_sound, false), coalesce(t.language, '')
            FROM claimed c JOIN notifications n ON n.notification_id = c.notification_id
            LEFT JOIN device_tokens t ON t.token_id = c.token_id AND t.token = c.token AND t.user_id = c.user_id
            """)
    // One statement records a whole batch's outcomes: a round trip per batch, not per delivery.
    static let record = PostgresStatement(
        name: "push_record_deliveries",
        sql: """
            UPDATE deliveries d SET state = u.state, last_result = u.result, updated_at = $6,
                next_attempt_at = 'epoch'::timestamptz + u.next_micros * interval '1 microsecond'
            FROM unnest($1::uuid[], $2::uuid[], $3::int4[], $4::int8[], $5::text[])
                AS u (notification_id, token_id, state, next_micros, result)
            WHERE d.notification_id = u.notification_id AND d.token_id = u.token_id
            """)

    /// Claims up to `limit` due deliveries until `leaseEnd`.
    func claim(
        now: Date, leaseEnd: Date, limit: Int, on database: some PostgresQueryable
    ) async throws
        -> [ClaimedDelivery]
    {
        let rows = try await database.execute(Self.claim, [now, leaseEnd, limit])
        var notifications: [RaveID: PushV1.Notification] = [:]
        for row in rows {
            guard let bytes = try row.decode([UInt8]?.self, at: 7) else { continue }
            let request = try PushV1.SendNotificationRequest(protobufBytes: bytes)
            notifications[try row.decode(RaveID.self, at: 0)] = request.notification ?? PushV1.Notification()
        }
        return try rows.map { row in
            let notificationID = try row.decode(RaveID.self, at: 0)
            let notification = notifications[notificationID] ?? PushV1.Notification()
            let push = OutgoingPush(
                token: try row.decode(String.self, at: 3), sandbox: try row.decode(Bool.self, at: 4),
                notification: EventTemplates.localized(notification, language: try row.decode(String.self, at: 10)),
                expiresAt: try row.decode(Date.self, at: 6),
                sound: try row.decode(Bool.self, at: 9))
            return ClaimedDelivery(
                notificationID: notificationID, tokenID: try row.decode(RaveID.self, at: 1),
                platform: PushV1.Platform(rawValue: Int32(try row.decode(Int64.self, at: 2))), push: push,
                attempts: try row.decode(Int.self, at: 5), stillRegistered: try row.decode(Bool.self, at: 8))
        }
    }

    /// Writes the outcome of each attempt: its new state, when to try next (pending rows) and the provider's answer.
    func record(_ outcomes: [DeliveryOutcome], now: Date, on database: some PostgresQueryable) async throws {
        guard !outcomes.isEmpty else { return }
        _ = try await database.execute(
            Self.record,
            [
                outcomes.map(\.delivery.notificationID), outcomes.map(\.delivery.tokenID),
                outcomes.map(\.state.rawValue),
                outcomes.map { PostgresTimestamp($0.nextAttempt).microsecondsSinceEpoch },
                outcomes.map(\.result), now,
            ])
    }
}

/// What one attempt led to.
struct DeliveryOutcome: Sendable {
    var delivery: ClaimedDelivery
    var state: PushV1.DeliveryState
    /// For a pending (retried) delivery, when to try again; otherwise unused.
    var nextAttempt: Date
    var result: String
}
