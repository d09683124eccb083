import Foundation
import RaveMessages
import RavePostgres

/// One device a notification may go to, with what the consent rules need.
struct TargetDevice: Sendable {
    var tokenID: RaveID
    var consent: PushV1.Consent
    var timeZone: TimeZone
}

/// Notifications with their deliveries and inbox entries, written together in one transaction.
struct NotificationStore: Sendable {
    static let insertNotification = PostgresStatement(
        name: "push_insert_notification",
        sql: """
            INSERT INTO notifications (notification_id, app_id, request, queued, held, skipped, created_at, expires_at)
            VALUES ($1, $2, $3, 0, 0, 0, $4, $5) ON CONFLICT (notification_id) DO NOTHING RETURNING notification_id
            """)
    static let selectNotification = PostgresStatement(
        name: "push_select_notification",
        sql: "SELECT request, queued, held, skipped FROM notifications WHERE notification_id = $1")
    // The device's fields are read here and copied into its delivery row, so a later re-registration or removal
    // of the token does not change what this delivery was for.
    static let selectTargets = PostgresStatement(
        name: "push_select_targets",
        sql: """
            SELECT token_id, consent_push, consent_advertising, consent_night_advertising, time_zone, user_id,
                platform, token, sandbox
            FROM device_tokens WHERE app_id = $1 AND user_id = ANY($2::uuid[])
            """)
    /// The columns the fan-out COPY fills (attempts keeps its default).
    static let deliveryColumns = [
        "notification_id", "token_id", "user_id", "platform", "token", "sandbox", "state", "next_attempt_at",
        "last_result", "updated_at",
    ]
    static let insertInbox = PostgresStatement(
        name: "push_insert_inbox",
        sql: """
            INSERT INTO inbox_entries (user_id, notification_id, app_id, created_at)
            SELECT DISTINCT u, $1::uuid, $3, $4 FROM unnest($2::uuid[]) AS u ON CONFLICT DO NOTHING
            """)
    static let updateCounts = PostgresStatement(
        name: "push_update_counts",
        sql: "UPDATE notifications SET queued = $2, held = $3, skipped = $4 WHERE notification_id = $1")
    static let selectApplication = PostgresStatement(
        name: "push_select_notification_application",
        sql: "SELECT app_id FROM notifications WHERE notification_id = $1")
    static let selectDeliveries = PostgresStatement(
        name: "push_select_deliveries",
        sql: """
            SELECT user_id, platform, token, state, attempts, last_result, updated_at FROM deliveries
            WHERE notification_id = $1 ORDER BY user_id, token
            """)

    /// Stores the notification, one delivery per device of the recipients and an inbox entry per recipient.
    ///
    /// `decide` applies the consent rules to each device. A repeated id with the same request returns the
    /// original counts; with a different request it is ALREADY_EXISTS.
    func send(
        id: RaveID, request: PushV1.SendNotificationRequest, users: [RaveID], expiresAt: Date, now: Date,
        on pool: PostgresPool, decide: @Sendable (TargetDevice) -> DeliveryDecision
    ) async throws -> PushV1.SendNotificationResponse {
        try await pool.transaction { transaction in
            try await send(
                id: id, request: request, users: users, expiresAt: expiresAt, now: now, in: transaction,
                decide: decide)
        }
    }

    /// The same inside the caller's transaction (an event's notification commits with its processed mark).
    func send(
        id: RaveID, request: PushV1.SendNotificationRequest, users: [RaveID], expiresAt: Date, now: Date,
        in transaction: PostgresTransaction, decide: @Sendable (TargetDevice) -> DeliveryDecision
    ) async throws -> PushV1.SendNotificationResponse {
        let requestBytes = request.protobufBytes()
        let inserted = try await transaction.execute(
            Self.insertNotification, [id, request.appId, requestBytes, now, expiresAt])
        guard !inserted.isEmpty else {
            return try await replay(id: id, requestBytes: requestBytes, on: transaction)
        }
        var counts = PushV1.SendNotificationResponse(notificationId: id.hex)
        let targets = try await transaction.execute(Self.selectTargets, [request.appId, users])
        let sentAt = PostgresTimestamp(now)
        // Binary COPY is the fastest way in for a large fan-out: one round trip, no SQL parsing per row.
        var zones: [String: TimeZone] = [:]
        try await transaction.connection.copyFrom(table: "deliveries", columns: Self.deliveryColumns) { writer in
            for row in targets {
                let zoneName = try row.decode(String.self, at: 4)
                let zone = zones[zoneName] ?? TimeZone(identifier: zoneName) ?? .gmt
                zones[zoneName] = zone
                let device = TargetDevice(
                    tokenID: try row.decode(RaveID.self, at: 0),
                    consent: PushV1.Consent(
                        push: try row.decode(Bool.self, at: 1), advertising: try row.decode(Bool.self, at: 2),
                        nightAdvertising: try row.decode(Bool.self, at: 3)),
                    timeZone: zone)
                let state: PushV1.DeliveryState
                let nextAttempt: PostgresTimestamp
                let reason: String
                switch decide(device) {
                case .sendNow:
                    (state, nextAttempt, reason) = (.pending, sentAt, "")
                    counts.queued += 1
                case .hold(let until):
                    (state, nextAttempt, reason) = (.held, PostgresTimestamp(until), "held until the device's morning")
                    counts.held += 1
                case .skip(let why):
                    (state, nextAttempt, reason) = (.skipped, sentAt, why)
                    counts.skipped += 1
                }
                writer.appendRow(
                    id, device.tokenID, try row.decode(RaveID.self, at: 5), Int16(try row.decode(Int64.self, at: 6)),
                    try row.decode(String.self, at: 7), try row.decode(Bool.self, at: 8), Int16(state.rawValue),
                    nextAttempt, reason, sentAt)
            }
        }
        try await transaction.execute(Self.insertInbox, [id, users, request.appId, now])
        try await transaction.execute(Self.updateCounts, [id, counts.queued, counts.held, counts.skipped])
        return counts
    }

    private func replay(
        id: RaveID, requestBytes: [UInt8], on database: some PostgresQueryable
    ) async throws
        -> PushV1.SendNotificationResponse
    {
        let rows = try await database.execute(Self.selectNotification, [id])
        guard let row = rows.first, try row.decode([UInt8].self, at: 0) == requestBytes else {
            throw PushError(
                .conflictingReplay, "notification \(id.hex) was already sent with a different request")
        }
        return PushV1.SendNotificationResponse(
            notificationId: id.hex, queued: try row.decode(Int32.self, at: 1),
            held: try row.decode(Int32.self, at: 2), skipped: try row.decode(Int32.self, at: 3))
    }

    /// The application a notification was sent for; nil for an unknown notification.
    func application(of id: RaveID, on database: some PostgresQueryable) async throws -> String? {
        try await database.execute(Self.selectApplication, [id]).first?.decode(String.self, at: 0)
    }

    /// The delivery state per device of one notification.
    func deliveries(of id: RaveID, on database: some PostgresQueryable) async throws -> [PushV1.Delivery] {
        try await database.execute(Self.selectDeliveries, [id]).map { row in
            PushV1.Delivery(
                userId: try row.decode(RaveID.self, at: 0).hex,
                platform: PushV1.Platform(rawValue: Int32(try row.decode(Int64.self, at: 1))),
                token: try row.decode(String.self, at: 2),
                state: PushV1.DeliveryState(rawValue: Int32(try row.decode(Int64.self, at: 3))),
                attempts: try row.decode(Int32.self, at: 4), lastResult: try row.decode(String.self, at: 5),
                updatedAtMicros: try row.decode(PostgresTimestamp.self, at: 6).microsecondsSinceEpoch)
        }
    }
}
