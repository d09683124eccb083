import RaveMessages
import RavePostgres

/// Merges for operators: the list, newest first, and retrying a participant at once.
extension MergeStore {
    /// Where a page of merges ended: the last merge's start and id.
    typealias ListCursor = PageCursor

    /// $1 state or null, $2 a user (source or target) or null, $3/$4 the cursor or null, $5 the limit.
    static let selectPage = PostgresStatement(
        name: "identity_merge_page",
        sql: """
            SELECT m.id, m.source_user_id, m.target_user_id, m.state, m.created_at,
                \(SagaParticipantStore.merges.answerColumns)
            FROM merges m
            WHERE ($1::text IS NULL OR m.state = $1)
                AND ($2::uuid IS NULL OR m.source_user_id = $2 OR m.target_user_id = $2)
                AND ($3::timestamptz IS NULL OR (m.created_at, m.id) < ($3, $4::uuid))
            ORDER BY m.created_at DESC, m.id DESC LIMIT $5
            """)

    /// Up to `limit` merges after `cursor`, newest first, and the cursor of the next page (nil on the last).
    func page(
        state: IdentityV1.MergeState?, user: RaveID?, after cursor: ListCursor?, limit: Int
    ) async throws -> (merges: [IdentityV1.Merge], next: ListCursor?) {
        let stateText: String? =
            switch state {
            case .pending: "pending"
            case .completed: "completed"
            default: nil
            }
        let rows = try await database.execute(
            Self.selectPage, [stateText, user, cursor?.createdAt, cursor?.id, Int64(limit + 1)])
        var merges: [IdentityV1.Merge] = []
        var next: ListCursor?
        for row in rows.prefix(limit) {
            merges.append(try Self.merge(from: row))
            next = ListCursor(
                createdAt: try row.decode(PostgresTimestamp.self, column: "created_at"),
                id: try row.decode(RaveID.self, column: "id"))
        }
        return (merges, rows.count > limit ? next : nil)
    }

    /// Makes every undelivered event of the participant ($1, the events' key) that waits for a retry due now.
    ///
    /// The outbox delivers a key's events in order, so the oldest is the one the participant is stuck on; its
    /// erasures share the key.
    static let retryParticipant = PostgresStatement(
        name: "identity_merge_retry_participant",
        sql: """
            UPDATE outbox_events SET next_attempt_at = now()
            WHERE key = $1 AND delivered_at IS NULL AND next_attempt_at > now()
            """)

    /// The number of the participant's events made due now.
    func retry(participant: String) async throws -> Int {
        try await database.execute(Self.retryParticipant, [participant]).affectedRowCount
    }
}
