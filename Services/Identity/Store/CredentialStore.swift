import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// Password credentials (the login throttle's counters are `LoginThrottleStore`'s).
struct CredentialStore: Sendable {
    let database: any PostgresQueryable

    static let insertPassword = PostgresStatement(
        name: "identity_insert_password",
        sql: "INSERT INTO password_credentials (user_id, email, hash) VALUES ($1, $2, $3)")
    static let selectPassword = PostgresStatement(
        name: "identity_select_password",
        sql: """
            SELECT c.user_id, c.hash FROM password_credentials c JOIN users u ON u.id = c.user_id
            WHERE lower(c.email) = lower($1) AND u.merged_into IS NULL
            """)
    static let updatePassword = PostgresStatement(
        name: "identity_update_password",
        sql: "UPDATE password_credentials SET hash = $2, updated_at = now() WHERE user_id = $1")
    /// Adds a password; ALREADY_EXISTS when another account logs in with that email.
    func addPassword(userID: RaveID, email: String, hash: String) async throws {
        do {
            _ = try await database.execute(Self.insertPassword, [userID, email, hash])
        } catch let error as PostgresError where error.sqlState == "23505" {
            if error.constraint == "password_credentials_email" {
                throw IdentityError.alreadyExists("an account with email \(email) already exists; log in instead")
            }
            throw IdentityError.alreadyExists("this account already has a password")
        }
    }

    func password(email: String) async throws -> (userID: RaveID, hash: String)? {
        guard let row = try await database.execute(Self.selectPassword, [email]).first else { return nil }
        return (try row.decode(column: "user_id"), try row.decode(column: "hash"))
    }

    func replacePassword(userID: RaveID, hash: String) async throws {
        _ = try await database.execute(Self.updatePassword, [userID, hash])
    }
}
