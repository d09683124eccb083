import Foundation
import RaveMessages
import RavePostgres

/// Operators' player search (`IdentityAdmin/SearchUsers`): exact matches without case on the username, the profile
/// email (verified or not) and the password login's email, each through its own index.
struct UserSearchStore: Sendable {
    let database: any PostgresQueryable

    /// At most this many users are answered.
    static let limit = 20

    static let search = PostgresStatement(
        name: "identity_search_users",
        sql: """
            SELECT id FROM (
                SELECT id, created_at FROM users
                WHERE lower(username) = lower($1) AND username IS NOT NULL AND merged_into IS NULL
                UNION
                SELECT id, created_at FROM users
                WHERE lower(email) = lower($1) AND email IS NOT NULL AND merged_into IS NULL
                UNION
                SELECT u.id, u.created_at FROM password_credentials c JOIN users u ON u.id = c.user_id
                WHERE lower(c.email) = lower($1) AND u.merged_into IS NULL
            ) found
            ORDER BY created_at, id
            LIMIT $2
            """)

    /// The (canonical) users whose username or an email is `text`, oldest account first.
    func users(matching text: String) async throws -> [RaveID] {
        try await database.execute(Self.search, [text, Int64(Self.limit)]).map {
            try $0.decode(RaveID.self, column: "id")
        }
    }
}
