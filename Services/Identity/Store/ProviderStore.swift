import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// Provider links: which user a provider's subject signs in as (one link per subject, one per provider per user).
struct ProviderStore: Sendable {
    let database: any PostgresQueryable

    /// The link's user, resolved through merges, locked so a concurrent connect of the same subject waits.
    static let selectOwner = PostgresStatement(
        name: "identity_select_link_owner",
        sql: """
            SELECT coalesce(u.merged_into, u.id) AS user_id FROM provider_links l JOIN users u ON u.id = l.user_id
            WHERE l.provider = $1 AND l.subject = $2 FOR UPDATE OF l
            """)
    /// The link's user as recorded (not resolved through merges).
    static let selectLink = PostgresStatement(
        name: "identity_select_provider_link",
        sql: "SELECT user_id FROM provider_links WHERE provider = $1 AND subject = $2")
    static let insertLink = PostgresStatement(
        name: "identity_insert_link",
        sql: "INSERT INTO provider_links (provider, subject, user_id, email) VALUES ($1, $2, $3, $4)")
    static let moveLink = PostgresStatement(
        name: "identity_move_link",
        sql: "UPDATE provider_links SET user_id = $3, created_at = now() WHERE provider = $1 AND subject = $2")
    static let deleteLink = PostgresStatement(
        name: "identity_delete_link", sql: "DELETE FROM provider_links WHERE user_id = $1 AND provider = $2")
    /// Locks the user's row (so two disconnects cannot each leave the other's credential as the last) and counts
    /// what the user can log in with.
    static let credentials = PostgresStatement(
        name: "identity_select_credentials",
        sql: """
            SELECT EXISTS (SELECT 1 FROM password_credentials c WHERE c.user_id = u.id) AS has_password,
                ARRAY(SELECT l.provider FROM provider_links l WHERE l.user_id = u.id ORDER BY l.provider) AS providers
            FROM users u WHERE u.id = $1 FOR UPDATE
            """)

    /// The user a provider subject signs in as, or nil when nobody linked it.
    func owner(provider: String, subject: String) async throws -> RaveID? {
        try await database.execute(Self.selectOwner, [provider, subject]).first?.decode(RaveID.self, column: "user_id")
    }

    /// Links the subject to `userID`; ALREADY_EXISTS when the user has another account of that provider.
    func link(provider: String, subject: String, userID: RaveID, email: String?) async throws {
        do {
            _ = try await database.execute(Self.insertLink, [provider, subject, userID, email])
        } catch let error as PostgresError where error.sqlState == "23505" {
            guard error.constraint == "provider_links_pkey" else { throw Self.alreadyLinked(provider) }
            // A concurrent first login of the same subject won; retrying finds its link.
            throw IdentityError.aborted("another login linked this \(provider) account at the same moment; retry")
        }
    }

    /// Takes the subject's link away from its current user and gives it to `userID` (force-disconnect).
    func move(provider: String, subject: String, to userID: RaveID) async throws {
        do {
            _ = try await database.execute(Self.moveLink, [provider, subject, userID])
        } catch let error as PostgresError where error.sqlState == "23505" {
            throw Self.alreadyLinked(provider)
        }
    }

    /// The user `subject` of `provider` is linked to, as recorded; nil when it is linked to nobody.
    func linkedUser(provider: String, subject: String) async throws -> RaveID? {
        try await database.execute(Self.selectLink, [provider, subject]).first?.decode(RaveID.self, column: "user_id")
    }

    /// Removes the user's link to `provider`; false when there was none.
    func unlink(userID: RaveID, provider: String) async throws -> Bool {
        try await database.execute(Self.deleteLink, [userID, provider]).affectedRowCount == 1
    }

    /// Whether the user has a password and which providers it is linked to, locking the user's row.
    func credentials(userID: RaveID) async throws -> (hasPassword: Bool, providers: [String]) {
        guard let row = try await database.execute(Self.credentials, [userID]).first else {
            throw IdentityError.notFound("no user \(userID.hex)")
        }
        return (try row.decode(column: "has_password"), try row.decode(column: "providers"))
    }

    static func alreadyLinked(_ provider: String) -> IdentityError {
        .alreadyExists("this account is already connected to another \(provider) account; disconnect it first")
    }
}
