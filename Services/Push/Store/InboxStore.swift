import Foundation
import RaveMessages
import RavePostgres

/// The in-app inbox: every notification stored for each recipient, for apps that show notifications themselves.
struct InboxStore: Sendable {
    static let selectPage = PostgresStatement(
        name: "push_select_inbox",
        sql: """
            SELECT e.notification_id, n.request, e.read, e.created_at
            FROM inbox_entries e JOIN notifications n USING (notification_id)
            WHERE e.user_id = $1 AND e.app_id = $2
            ORDER BY e.read, e.created_at DESC, e.notification_id LIMIT $3 OFFSET $4
            """)
    static let countUnread = PostgresStatement(
        name: "push_count_unread",
        sql: "SELECT count(*) FROM inbox_entries WHERE user_id = $1 AND app_id = $2 AND NOT read")
    static let markRead = PostgresStatement(
        name: "push_mark_read",
        sql: """
            UPDATE inbox_entries SET read = true
            WHERE user_id = $1 AND app_id = $2 AND NOT read AND notification_id = ANY($3::uuid[])
            """)
    static let markAllRead = PostgresStatement(
        name: "push_mark_all_read",
        sql: "UPDATE inbox_entries SET read = true WHERE user_id = $1 AND app_id = $2 AND NOT read")

    func page(
        user: RaveID, app: String, size: Int, offset: Int, on database: some PostgresQueryable
    ) async throws
        -> PushV1.ListInboxResponse
    {
        var response = PushV1.ListInboxResponse()
        for row in try await database.execute(Self.selectPage, [user, app, size, offset]) {
            let request = try PushV1.SendNotificationRequest(protobufBytes: try row.decode([UInt8].self, at: 1))
            let notification = request.notification ?? PushV1.Notification()
            response.entries.append(
                PushV1.InboxEntry(
                    notificationId: try row.decode(RaveID.self, at: 0).hex, title: notification.title,
                    body: notification.body, data: notification.data, category: notification.category,
                    read: try row.decode(Bool.self, at: 2),
                    createdAtMicros: try row.decode(PostgresTimestamp.self, at: 3).microsecondsSinceEpoch))
        }
        response.unreadCount = Int32(
            try await database.execute(Self.countUnread, [user, app])[0].decode(Int64.self, at: 0))
        return response
    }

    func markRead(user: RaveID, app: String, ids: [RaveID], on database: some PostgresQueryable) async throws -> Int {
        if ids.isEmpty { return try await database.execute(Self.markAllRead, [user, app]).affectedRowCount }
        return try await database.execute(Self.markRead, [user, app, ids]).affectedRowCount
    }
}
