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
    static let selectPasswordOfUser = PostgresStatement(
        name: "identity_select_password_of_user",
        sql: "SELECT email, hash, previous_hash, changed_at FROM password_credentials WHERE user_id = $1")
    /// Replaces the hash `$2` (so a concurrent change makes this one match nothing) and keeps it as the previous.
    static let changePassword = PostgresStatement(
        name: "identity_change_password",
        sql: """
            UPDATE password_credentials SET previous_hash = hash, hash = $3, changed_at = $4, updated_at = now()
            WHERE user_id = $1 AND hash = $2
            """)

    /// A user's password as `ChangePassword` needs it: the login email, the hash, and the hash the last change
    /// replaced with when it happened.
    struct StoredPassword: Sendable {
        var email: String
        var hash: String
        var previousHash: String?
        var changedAt: Date?
    }

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

    /// The user's password; nil when the account has none.
    func password(userID: RaveID) async throws -> StoredPassword? {
        guard let row = try await database.execute(Self.selectPasswordOfUser, [userID]).first else { return nil }
        return StoredPassword(
            email: try row.decode(column: "email"), hash: try row.decode(column: "hash"),
            previousHash: try row.decode(column: "previous_hash"), changedAt: try row.decode(column: "changed_at"))
    }

    /// Replaces the hash `replacing` with `hash` at `now`; false when the stored hash is no longer `replacing`.
    func changePassword(userID: RaveID, replacing: String, with hash: String, at now: Date) async throws -> Bool {
        try await database.execute(Self.changePassword, [userID, replacing, hash, now]).affectedRowCount == 1
    }

    func replacePassword(userID: RaveID, hash: String) async throws {
        _ = try await database.execute(Self.updatePassword, [userID, hash])
    }
}
