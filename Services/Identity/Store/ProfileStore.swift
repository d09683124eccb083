import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime

/// Writes to a user's personal data, global or app-scoped.
struct ProfileStore: Sendable {
    let database: any PostgresQueryable

    static let recordSignUp = PostgresStatement(
        name: "identity_record_sign_up",
        sql: """
            UPDATE users SET email = coalesce(email, $2), birth_year = $3, country = $4, newsletter_opt_in = $5,
                username = coalesce($6, username), updated_at = now()
            WHERE id = $1
            """)
    /// `$2…$8` are (set?, value) pairs flattened: a NULL flag leaves the column alone.
    static let updateGlobal = PostgresStatement(
        name: "identity_update_profile",
        sql: """
            UPDATE users SET
                username = CASE WHEN $2 THEN $3 ELSE username END,
                display_name = CASE WHEN $4 THEN $5 ELSE display_name END,
                picture_url = CASE WHEN $6 THEN $7 ELSE picture_url END,
                email = CASE WHEN $8 THEN $9 ELSE email END,
                email_verified = CASE WHEN $8 THEN false ELSE email_verified END,
                birth_date = CASE WHEN $10 THEN $11 ELSE birth_date END,
                gender = CASE WHEN $12 THEN $13 ELSE gender END,
                country = CASE WHEN $14 THEN $15 ELSE country END,
                updated_at = now()
            WHERE id = $1
            """)
    static let upsertAppProfile = PostgresStatement(
        name: "identity_upsert_app_profile",
        sql: """
            INSERT INTO user_app_profiles AS p (user_id, app_id, display_name, picture_url)
            VALUES ($1, $2, CASE WHEN $3 THEN $4 END, CASE WHEN $5 THEN $6 END)
            ON CONFLICT (user_id, app_id) DO UPDATE SET
                display_name = CASE WHEN $3 THEN $4 ELSE p.display_name END,
                picture_url = CASE WHEN $5 THEN $6 ELSE p.picture_url END
            """)

    /// A provider's name and picture for a profile that has none of its own (global values only: the player's
    /// app-scoped choices stay theirs), and the email the provider vouches for (`$4`, only when the ID token says
    /// it is verified): it becomes the profile's email when there is none, and marks an equal one verified, unless
    /// another account already holds it verified (verified emails are unique).
    static let fillFromProvider = PostgresStatement(
        name: "identity_fill_profile_from_provider",
        sql: """
            WITH proven AS (
                SELECT (SELECT $4::text WHERE NOT EXISTS (
                    SELECT 1 FROM users o WHERE lower(o.email) = lower($4::text) AND o.email_verified AND o.id <> $1
                )) AS email
            )
            UPDATE users u SET display_name = coalesce(u.display_name, $2), picture_url = coalesce(u.picture_url, $3),
                email = coalesce(u.email, p.email),
                email_verified = u.email_verified OR coalesce(lower(coalesce(u.email, p.email)) = lower(p.email), false),
                updated_at = now()
            FROM proven p
            WHERE u.id = $1 AND (u.display_name IS NULL AND $2::text IS NOT NULL
                OR u.picture_url IS NULL AND $3::text IS NOT NULL OR NOT u.email_verified AND p.email IS NOT NULL)
            """)

    func recordSignUp(
        userID: RaveID, email: String, birthYear: Int32, country: String, newsletter: Bool, username: String?
    ) async throws {
        try await translatingConflicts {
            _ = try await database.execute(
                Self.recordSignUp, [userID, email, birthYear, country, newsletter, username])
        }
    }

    /// A change to one field: nil leaves it alone, `.some(nil)` clears it.
    typealias Change = String??
    typealias DateChange = PostgresDate??

    struct Changes: Sendable {
        var username: Change = nil
        var displayName: Change = nil
        var pictureURL: Change = nil
        var email: Change = nil
        var birthDate: DateChange = nil
        var gender: Change = nil
        var country: Change = nil
        /// App-scoped values, written to `user_app_profiles` instead of the user.
        var appDisplayName: Change = nil
        var appPictureURL: Change = nil
    }

    /// Sets the display name, picture and verified email from a provider's ID token where the user has none.
    ///
    /// Values that would not pass UpdateCurrentUser's checks are skipped (a name is fitted to
    /// `TextRule.displayName`: control characters become spaces, a long one is cut). `verifiedEmail` is the ID
    /// token's email when the provider asserts it is verified, else nil.
    func fillFromProvider(userID: RaveID, name: String?, picture: String?, verifiedEmail: String?) async throws {
        let displayName = name.flatMap { TextRule.displayName.fitting($0) }
        let pictureURL = picture.flatMap { try? Validation.pictureURL($0) }
        let email = verifiedEmail.flatMap { try? Validation.email($0) }
        guard displayName != nil || pictureURL != nil || email != nil else { return }
        try await translatingConflicts {
            _ = try await database.execute(Self.fillFromProvider, [userID, displayName, pictureURL, email])
        }
    }

    func update(userID: RaveID, appID: RaveID, changes: Changes) async throws {
        func pair<Value: PostgresEncodable>(_ change: Value??) -> [(any PostgresEncodable)?] {
            [change != nil, change ?? nil]
        }
        let global: [(any PostgresEncodable)?] =
            pair(changes.username) + pair(changes.displayName) + pair(changes.pictureURL) + pair(changes.email)
            + pair(changes.birthDate) + pair(changes.gender) + pair(changes.country)
        try await translatingConflicts {
            _ = try await database.execute(Self.updateGlobal, [userID] + global)
            if changes.appDisplayName != nil || changes.appPictureURL != nil {
                _ = try await database.execute(
                    Self.upsertAppProfile, [userID, appID] + pair(changes.appDisplayName) + pair(changes.appPictureURL))
            }
        }
    }

    /// Unique-index violations become ALREADY_EXISTS naming the taken value.
    private func translatingConflicts(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as PostgresError where error.sqlState == "23505" {
            switch error.constraint {
            case "users_username": throw IdentityError.alreadyExists("that username is taken; choose another")
            case "users_verified_email": throw IdentityError.alreadyExists("that email belongs to another account")
            default: throw error
            }
        }
    }
}
