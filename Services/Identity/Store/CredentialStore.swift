import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// Password credentials and the failed-login counters that rate-limit them.
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
    static let selectLock = PostgresStatement(
        name: "identity_select_login_lock",
        sql: "SELECT max(locked_until) AS locked_until FROM login_attempts WHERE key = ANY($1) AND locked_until > now()"
    )
    /// Counts a failure; the `limit`th failure locks the key for `first * 2^lockouts` seconds (capped).
    static let recordFailure = PostgresStatement(
        name: "identity_record_login_failure",
        sql: """
            INSERT INTO login_attempts AS a (key, failures) VALUES ($1, 1)
            ON CONFLICT (key) DO UPDATE SET failures = a.failures + 1, updated_at = now()
            RETURNING failures, lockouts
            """)
    static let lock = PostgresStatement(
        name: "identity_lock_login",
        sql: """
            UPDATE login_attempts SET failures = 0, lockouts = lockouts + 1,
                locked_until = now() + make_interval(secs => $2) WHERE key = $1
            """)
    static let clear = PostgresStatement(
        name: "identity_clear_login_failures", sql: "DELETE FROM login_attempts WHERE key = $1")

    /// Adds a password; ALREADY_EXISTS when another account logs in with that email.
    func addPassword(userID: RaveID, email: String, hash: String) async throws {
        do {
            _ = try await database.execute(Self.insertPassword, [userID, email, hash])
        } catch let error as PostgresError where error.sqlState == "23505" {
            if error.constraint == "password_credentials_email" {
                throw RPCError.alreadyExists("an account with email \(email) already exists; log in instead")
            }
            throw RPCError.alreadyExists("this account already has a password")
        }
    }

    func password(email: String) async throws -> (userID: RaveID, hash: String)? {
        guard let row = try await database.execute(Self.selectPassword, [email]).first else { return nil }
        return (try row.decode(column: "user_id"), try row.decode(column: "hash"))
    }

    func replacePassword(userID: RaveID, hash: String) async throws {
        _ = try await database.execute(Self.updatePassword, [userID, hash])
    }

    /// When the latest lockout among `keys` ends, if one is in force.
    func lockedUntil(keys: [String]) async throws -> Date? {
        return try await database.execute(Self.selectLock, [keys]).first?.decode(Date?.self, column: "locked_until")
    }

    /// Counts a failed attempt for each key and locks those that reached the limit.
    func recordFailure(keys: [String], configuration: IdentityConfiguration) async throws {
        for key in keys {
            let row = try await database.execute(Self.recordFailure, [key])[0]
            let failures = try row.decode(Int32.self, column: "failures")
            let lockouts = try row.decode(Int32.self, column: "lockouts")
            guard failures >= configuration.failuresBeforeLockout else { continue }
            let seconds = min(
                configuration.maximumLockout, configuration.firstLockout * pow(2, Double(min(lockouts, 20))))
            _ = try await database.execute(Self.lock, [key, seconds])
        }
    }

    func clearFailures(key: String) async throws {
        _ = try await database.execute(Self.clear, [key])
    }
}
