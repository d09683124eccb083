import RaveMessages
import RavePostgres

/// Where a page of rows ordered by (created_at, id) ended: the last row's creation and id, as the token
/// "<microseconds>.<id hex>" (merges, publishers, applications).
struct PageCursor: Sendable, Hashable {
    var createdAt: PostgresTimestamp
    var id: RaveID

    var token: String { "\(createdAt.microsecondsSinceEpoch).\(id.hex)" }

    init(createdAt: PostgresTimestamp, id: RaveID) {
        self.createdAt = createdAt
        self.id = id
    }

    /// The cursor of `row`'s `created_at` and `id` columns.
    init(row: PostgresRow) throws {
        self.init(
            createdAt: try row.decode(PostgresTimestamp.self, column: "created_at"),
            id: try row.decode(RaveID.self, column: "id"))
    }

    /// Nil for a token this method did not return.
    init?(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let micros = Int64(parts[0]), let id = RaveID(wire: String(parts[1])) else {
            return nil
        }
        self.init(createdAt: PostgresTimestamp(microsecondsSinceEpoch: micros), id: id)
    }

    /// The request's `page_token` as a cursor: nil when empty, INVALID_ARGUMENT naming `method` when `method` did not
    /// return it.
    static func parse(_ token: String, method: String) throws(IdentityError) -> PageCursor? {
        guard !token.isEmpty else { return nil }
        guard let cursor = PageCursor(token: token) else {
            throw .invalidArgument("page_token must be a next_page_token \(method) returned")
        }
        return cursor
    }
}
