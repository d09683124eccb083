import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// A user's row with what the account state is derived from.
struct UserRecord: Sendable {
    var id: RaveID
    var username: String?
    var displayName: String?
    var pictureURL: String?
    var email: String?
    var emailVerified: Bool
    var birthDate: String?
    var birthYear: Int32?
    var gender: String?
    var country: String?
    var hasPassword: Bool
    var providers: [String]
    var twoFactorEnabled: Bool
    var createdAt: Date
    var updatedAt: Date
    /// Whether the user's own (not app-scoped) display name or picture is set, for `globalAccountState`.
    var hasGlobalNameOrPicture: Bool

    /// Derived, never stored: a credential makes an account authenticated; personal data makes it personalized.
    var accountState: IdentityV1.AccountState {
        let personal: [Any?] = [displayName, pictureURL, email, birthDate, birthYear, gender]
        return Self.accountState(
            hasCredential: hasPassword || !providers.isEmpty, hasPersonalData: personal.contains { $0 != nil })
    }

    /// The account state outside any application's scope, which access tokens carry whatever app they are for.
    var globalAccountState: IdentityV1.AccountState {
        let personal: [Any?] = [email, birthDate, birthYear, gender]
        return Self.accountState(
            hasCredential: hasPassword || !providers.isEmpty,
            hasPersonalData: hasGlobalNameOrPicture || personal.contains { $0 != nil })
    }

    static func accountState(hasCredential: Bool, hasPersonalData: Bool) -> IdentityV1.AccountState {
        if hasCredential { return .authenticated }
        return hasPersonalData ? .personalized : .anonymous
    }

    var profile: IdentityV1.UserProfile {
        IdentityV1.UserProfile(
            userId: id.hex, username: username ?? "", displayName: displayName ?? "", pictureUrl: pictureURL ?? "",
            accountState: accountState)
    }

    var message: IdentityV1.User {
        IdentityV1.User(
            profile: profile, email: email ?? "", emailVerified: emailVerified, birthDate: birthDate ?? "",
            birthYear: birthYear ?? 0, gender: gender ?? "", country: country ?? "",
            providers: providers.map(ProviderName.provider), hasPassword: hasPassword,
            twoFactorEnabled: twoFactorEnabled, createdAtUnixMs: createdAt.unixMilliseconds,
            updatedAtUnixMs: updatedAt.unixMilliseconds)
    }
}

/// Provider names as the database stores them.
enum ProviderName {
    static func provider(_ name: String) -> IdentityV1.Provider {
        switch name {
        case "google": .google
        case "apple": .apple
        case "facebook": .facebook
        default: .unspecified
        }
    }

    static func name(_ provider: IdentityV1.Provider) -> String? {
        switch provider {
        case .google: "google"
        case .apple: "apple"
        case .facebook: "facebook"
        default: nil
        }
    }
}

/// Users, their app-scoped values and their canonical ids.
struct UserStore: Sendable {
    let database: any PostgresQueryable

    /// Select-list columns (over `users u`, the showing application `a` and the user's profile in it `p`) that
    /// `record(_:)` decodes: the display name and picture the application shows (its own under app scope).
    static let recordColumns = """
        u.id, u.username,
        CASE WHEN a.display_name_scope = 'application' THEN coalesce(p.display_name, u.display_name)
            ELSE u.display_name END AS display_name,
        CASE WHEN a.picture_scope = 'application' THEN coalesce(p.picture_url, u.picture_url)
            ELSE u.picture_url END AS picture_url,
        u.email, u.email_verified, u.birth_date, u.birth_year, u.gender, u.country,
        u.created_at, u.updated_at,
        EXISTS (SELECT 1 FROM password_credentials c WHERE c.user_id = u.id) AS has_password,
        ARRAY(SELECT l.provider FROM provider_links l WHERE l.user_id = u.id ORDER BY l.provider) AS providers,
        EXISTS (SELECT 1 FROM two_factor t WHERE t.user_id = u.id AND t.confirmed_at IS NOT NULL) AS two_factor,
        u.display_name IS NOT NULL OR u.picture_url IS NOT NULL AS global_name_or_picture
        """
    /// Users by id as the application `$2` shows them.
    static let selectUsers = PostgresStatement(
        name: "identity_select_users",
        sql: """
            SELECT \(recordColumns)
            FROM users u
            LEFT JOIN applications a ON a.id = $2
            LEFT JOIN user_app_profiles p ON p.user_id = u.id AND p.app_id = $2
            WHERE u.id = ANY($1) AND u.merged_into IS NULL AND u.deleted_at IS NULL
            """)
    /// One user as the application `$2` shows them, with the ban stored for them (applying or not) and whether a
    /// deletion is scheduled.
    static let selectUserWithBan = PostgresStatement(
        name: "identity_select_user_with_ban",
        sql: """
            SELECT \(recordColumns), b.reason AS ban_reason, b.until_at AS ban_until,
                EXISTS (SELECT 1 FROM account_deletions d WHERE d.user_id = u.id AND d.status = 'scheduled')
                    AS deletion_scheduled
            FROM users u
            LEFT JOIN applications a ON a.id = $2
            LEFT JOIN user_app_profiles p ON p.user_id = u.id AND p.app_id = $2
            LEFT JOIN user_bans b ON b.user_id = u.id
            WHERE u.id = $1 AND u.merged_into IS NULL AND u.deleted_at IS NULL
            """)
    /// Select-list columns (over `users u`) for `globalAccountState(_:)`, for statements that read a user's state
    /// along with other rows instead of in a query of their own.
    static let accountStateColumns = """
        EXISTS (SELECT 1 FROM password_credentials c WHERE c.user_id = u.id)
            OR EXISTS (SELECT 1 FROM provider_links l WHERE l.user_id = u.id) AS has_credential,
        u.display_name IS NOT NULL OR u.picture_url IS NOT NULL OR u.email IS NOT NULL OR u.birth_date IS NOT NULL
            OR u.birth_year IS NOT NULL OR u.gender IS NOT NULL AS has_personal_data
        """
    static let insertUser = PostgresStatement(
        name: "identity_insert_user", sql: "INSERT INTO users (id) VALUES ($1)")
    /// A merged source resolves to its target (merges keep `merged_into` pointing at the final target); a deleted
    /// user resolves to nothing.
    ///
    /// One row of two parallel arrays rather than a row per user: ResolveUsers asks for up to 1000 ids at a time,
    /// and per-row work (in PostgreSQL, libpq and the decoder) was most of its cost.
    static let resolve = PostgresStatement(
        name: "identity_resolve_users",
        sql: """
            SELECT coalesce(array_agg(id), '{}') AS ids,
                coalesce(array_agg(coalesce(merged_into, id)), '{}') AS canonical
            FROM users WHERE id = ANY($1) AND deleted_at IS NULL
            """)
    static let selectByUsername = PostgresStatement(
        name: "identity_select_user_by_username",
        sql: "SELECT id FROM users WHERE lower(username) = lower($1) AND merged_into IS NULL")
    /// The user whose verified email `$1` is (verified emails are unique).
    ///
    /// With a publisher `$2`, only if they played one of its apps. A login email (`password_credentials`) is never
    /// matched: nobody proved it.
    static let selectByVerifiedEmail = PostgresStatement(
        name: "identity_select_user_by_verified_email",
        sql: """
            SELECT u.id FROM users u
            WHERE lower(u.email) = lower($1) AND u.email_verified AND u.merged_into IS NULL
                AND ($2::uuid IS NULL OR EXISTS (
                    SELECT 1 FROM app_users au JOIN applications a ON a.id = au.app_id
                    WHERE au.user_id = u.id AND a.publisher_id = $2))
            """)

    /// The account state outside any application's scope, from a row with `accountStateColumns`.
    static func globalAccountState(_ row: PostgresRow) throws -> IdentityV1.AccountState {
        UserRecord.accountState(
            hasCredential: try row.decode(column: "has_credential"),
            hasPersonalData: try row.decode(column: "has_personal_data"))
    }

    func createUser() async throws -> RaveID {
        let id = RaveID.random()
        _ = try await database.execute(Self.insertUser, [id])
        return id
    }

    /// The users with these (canonical) ids, as `appID` shows them; missing and merged ids are left out.
    func users(_ ids: [RaveID], appID: RaveID?) async throws -> [RaveID: UserRecord] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await database.execute(Self.selectUsers, [ids, appID])
        var users: [RaveID: UserRecord] = [:]
        for row in rows {
            let record = try Self.record(row)
            users[record.id] = record
        }
        return users
    }

    /// A user from a row with `recordColumns`.
    static func record(_ row: PostgresRow) throws -> UserRecord {
        UserRecord(
            id: try row.decode(column: "id"), username: try row.decode(column: "username"),
            displayName: try row.decode(column: "display_name"), pictureURL: try row.decode(column: "picture_url"),
            email: try row.decode(column: "email"), emailVerified: try row.decode(column: "email_verified"),
            birthDate: try row.decode(PostgresDate?.self, column: "birth_date")?.iso,
            birthYear: try row.decode(column: "birth_year"),
            gender: try row.decode(column: "gender"), country: try row.decode(column: "country"),
            hasPassword: try row.decode(column: "has_password"), providers: try row.decode(column: "providers"),
            twoFactorEnabled: try row.decode(column: "two_factor"), createdAt: try row.decode(column: "created_at"),
            updatedAt: try row.decode(column: "updated_at"),
            hasGlobalNameOrPicture: try row.decode(column: "global_name_or_picture"))
    }

    /// One user, or NOT_FOUND.
    func user(_ id: RaveID, appID: RaveID?) async throws -> UserRecord {
        guard let user = try await users([id], appID: appID)[id] else {
            throw IdentityError.notFound("no user \(id.hex)")
        }
        return user
    }

    /// One (canonical) user as `appID` shows them, the ban stored for them, and whether a deletion is scheduled;
    /// nil when missing, merged or deleted.
    func userWithBan(
        _ id: RaveID, appID: RaveID?
    ) async throws -> (user: UserRecord, ban: BanRecord?, deletionScheduled: Bool)? {
        guard let row = try await database.execute(Self.selectUserWithBan, [id, appID]).first else { return nil }
        let ban = try row.decode(String?.self, column: "ban_reason").map { reason in
            BanRecord(reason: reason, until: try row.decode(Date?.self, column: "ban_until"))
        }
        return (try Self.record(row), ban, try row.decode(column: "deletion_scheduled"))
    }

    /// Canonical ids of existing users: a merged source maps to its target; unknown and deleted ids are absent.
    func canonicalIDs(_ ids: [RaveID]) async throws -> [RaveID: RaveID] {
        guard !ids.isEmpty else { return [:] }
        guard let row = try await database.execute(Self.resolve, [ids]).first else { return [:] }
        let found = try row.decode([RaveID].self, column: "ids")
        let canonical = try row.decode([RaveID].self, column: "canonical")
        guard found.count == canonical.count else {
            throw IdentityError.internalError(
                "resolving users returned \(found.count) ids but \(canonical.count) targets")
        }
        return Dictionary(zip(found, canonical), uniquingKeysWith: { first, _ in first })
    }

    func userID(username: String) async throws -> RaveID? {
        return try await database.execute(Self.selectByUsername, [username]).first?.decode(RaveID.self, column: "id")
    }

    /// The user whose verified email `email` is; with `publisher`, only a user who played one of its apps.
    func userID(verifiedEmail email: String, publisher: RaveID?) async throws -> RaveID? {
        return try await database.execute(Self.selectByVerifiedEmail, [email, publisher]).first?.decode(
            RaveID.self, column: "id")
    }
}
