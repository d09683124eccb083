import Foundation
import RaveMessages
import RavePostgres

/// Publishers and applications for operators: pages, oldest first.
extension ApplicationStore {
    /// $1 one publisher or null (every one), $2/$3 the cursor or null, $4 the limit.
    static let selectPublisherPage = PostgresStatement(
        name: "identity_publisher_page",
        sql: """
            SELECT id, name, created_at FROM publishers
            WHERE ($1::uuid IS NULL OR id = $1) AND ($2::timestamptz IS NULL OR (created_at, id) > ($2, $3::uuid))
            ORDER BY created_at, id LIMIT $4
            """)
    /// $1 the publisher, $2/$3 the cursor or null, $4 the limit.
    static let selectApplicationPage = PostgresStatement(
        name: "identity_application_page",
        sql: """
            SELECT \(columns) FROM applications
            WHERE publisher_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) > ($2, $3::uuid))
            ORDER BY created_at, id LIMIT $4
            """)
    static let publisherExists = PostgresStatement(
        name: "identity_publisher_exists", sql: "SELECT 1 FROM publishers WHERE id = $1")

    /// Up to `limit` publishers after `cursor` (only `only` when given), and the next page's cursor (nil on the last).
    func publishers(
        only: RaveID?, after cursor: PageCursor?, limit: Int
    ) async throws -> (publishers: [IdentityV1.Publisher], next: PageCursor?) {
        let rows = try await database.execute(
            Self.selectPublisherPage, [only, cursor?.createdAt, cursor?.id, Int64(limit + 1)])
        let page = try rows.prefix(limit).map { row in
            IdentityV1.Publisher(
                publisherId: try row.decode(RaveID.self, column: "id").hex,
                name: try row.decode(String.self, column: "name"),
                createdAtUnixMs: try row.decode(Date.self, column: "created_at").unixMilliseconds)
        }
        return (page, rows.count > limit ? try PageCursor(row: rows[limit - 1]) : nil)
    }

    /// Up to `limit` of the publisher's applications after `cursor`, and the next page's cursor (nil on the last);
    /// NOT_FOUND when there is no such publisher.
    func applications(
        of publisher: RaveID, after cursor: PageCursor?, limit: Int
    ) async throws -> (applications: [ApplicationRecord], next: PageCursor?) {
        guard !(try await database.execute(Self.publisherExists, [publisher])).isEmpty else {
            throw IdentityError.notFound("no publisher \(publisher.hex)")
        }
        let rows = try await database.execute(
            Self.selectApplicationPage, [publisher, cursor?.createdAt, cursor?.id, Int64(limit + 1)])
        let page = try rows.prefix(limit).map(Self.record)
        return (page, rows.count > limit ? try PageCursor(row: rows[limit - 1]) : nil)
    }
}
