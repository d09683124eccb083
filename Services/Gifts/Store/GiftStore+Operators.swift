import RaveMessages
import RavePostgres

extension GiftStore {
    /// Every gift the user sent or received in the application, in any state, newest first; a cursor continues
    /// after the row it names ($4, $5 null for the first page).
    static let userGiftsPage = PostgresStatement(
        name: "gifts_user_page",
        sql: """
            \(presented)
            WHERE g.app_id = $2 AND (g.recipient_id = $1 OR g.sender_id = $1)
                AND ($4::timestamptz IS NULL OR (g.sent_at, g.id) < ($4, $5::uuid))
            ORDER BY g.sent_at DESC, g.id DESC LIMIT $3
            """)

    /// A page of the user's gifts, sent and received, for operators.
    func userGifts(
        of user: RaveID, appID: RaveID, limit: Int, after cursor: PageCursor?
    ) async throws -> (gifts: [GiftsV1.Gift], next: PageCursor?) {
        let rows = try await pool.execute(Self.userGiftsPage, [user, appID, limit, cursor?.time, cursor?.id])
        let gifts = try rows.map(Self.gift)
        guard gifts.count == limit, let last = rows.last else { return (gifts, nil) }
        let next = PageCursor(
            time: try last.decode(PostgresTimestamp.self, column: "sent_at"),
            id: try last.decode(RaveID.self, column: "id"))
        return (gifts, next)
    }
}
