import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// What a guest login did: which user the device plays as, how it was found, and the session it started.
struct GuestLoginRecord: Sendable {
    /// How the device's user was found.
    enum Source: String, Sendable {
        /// The device already played this app.
        case known
        /// Cross-app login: the player this device last signed in as in another app of the publisher.
        case shared
        /// A device seen for the first time: a new anonymous user.
        case created
    }

    var source: Source
    var user: UserRecord
    var sessionID: RaveID
    var refreshToken: String
    /// A ban that applied to the device's user (no session was opened), or, read after the statement, the one
    /// stored for the user (the session is open: the caller decides).
    var ban: BanRecord?
    /// Whether the user (known before) had a deletion scheduled, read after the statement: the login cancels it.
    var deletionScheduled = false
}

/// A whole guest login as one statement: PostgreSQL runs it atomically, so it needs no transaction and costs one
/// round trip (and one commit), where finding the device, creating the user, opening the session and reading the
/// user back would cost seven.
///
/// A device seen before costs one more read for its user's profile: reading it in the statement made every
/// new-device login, where the profile is blank, plan, lock and run five more tables (about a sixth of its CPU).
struct GuestLoginStore: Sendable {
    let database: any PostgresQueryable

    /// `$1` app, `$2` device, `$3` the app's publisher when the app allows cross-app login (else NULL), `$4` the id
    /// for a new user, `$5`/`$6` device name and platform, `$7` session id, `$8` its expiry, `$9` refresh token hash,
    /// `$10` now (bans that end before it no longer apply).
    ///
    /// A device whose user is banned gets no session: the statement returns the ban instead (a new user has none).
    ///
    /// The device's user (known, or cross-app) is locked (`FOR KEY SHARE`, which only a merge's or a deletion's
    /// `FOR UPDATE` waits for) so a merge or deletion that commits meanwhile is seen: the login then continues as the
    /// merge's target, or, for a deleted user (rechecked on its new row version), as a new user. A concurrent first
    /// login of the same device makes the plain insert into `device_logins` fail with a unique violation, and the
    /// whole statement (the new user included) rolls back.
    static let guestLogin = PostgresStatement(name: "identity_guest_login", sql: sql(crossApp: true))
    /// `guestLogin` for an app without cross-app login (`$3` NULL).
    ///
    /// It leaves out the cross-app lookup and re-pointing: even when skipped, they made every login lock, open and
    /// set up `applications`, its key and one more insert (about a tenth of PostgreSQL's CPU for a new device). A
    /// publisher given here creates no user, so the login fails rather than skip cross-app login.
    static let guestLoginWithinApp = PostgresStatement(
        name: "identity_guest_login_within_app", sql: sql(crossApp: false))

    /// The login statement; with `crossApp`, a device new to the app may continue as its cross-app player.
    private static func sql(crossApp: Bool) -> String {
        let shared =
            crossApp
            ? """
            ), shared AS (
                SELECT coalesce(u.merged_into, u.id) AS user_id FROM device_logins d
                JOIN applications a ON a.id = d.app_id JOIN users u ON u.id = d.user_id
                WHERE $3::uuid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM known) AND u.deleted_at IS NULL
                    AND d.device_id = $2 AND d.cross_app AND a.publisher_id = $3 AND a.cross_app_login
                ORDER BY d.updated_at DESC LIMIT 1 FOR KEY SHARE OF u
            """ : ""
        let notShared = crossApp ? "NOT EXISTS (SELECT 1 FROM shared)" : "$3::uuid IS NULL"
        let chosenShared = crossApp ? "UNION ALL SELECT user_id, 'shared' FROM shared" : ""
        let existing =
            crossApp
            ? "SELECT user_id FROM known UNION ALL SELECT user_id FROM shared" : "SELECT user_id FROM known"
        let pointed =
            crossApp
            ? """
            ), pointed AS (
                INSERT INTO device_logins (app_id, device_id, user_id, cross_app) SELECT $1, $2, user_id, true FROM shared
                ON CONFLICT (app_id, device_id) DO UPDATE SET user_id = EXCLUDED.user_id,
                    cross_app = EXCLUDED.cross_app, updated_at = now()
            """ : ""
        return """
            WITH known AS (
                SELECT coalesce(u.merged_into, u.id) AS user_id FROM device_logins d JOIN users u ON u.id = d.user_id
                WHERE d.app_id = $1 AND d.device_id = $2 AND u.deleted_at IS NULL FOR KEY SHARE OF u
            \(shared)), created AS (
                INSERT INTO users (id) SELECT $4 WHERE NOT EXISTS (SELECT 1 FROM known) AND \(notShared)
                RETURNING id AS user_id, created_at, updated_at
            ), chosen AS (
                SELECT user_id, 'known' AS source FROM known
                \(chosenShared)
                UNION ALL SELECT user_id, 'created' FROM created
            ), banned AS (
                SELECT reason, until_at FROM user_bans
                WHERE user_id = (\(existing) LIMIT 1) AND (until_at IS NULL OR until_at > $10)
            ), claimed AS (
                INSERT INTO device_logins (app_id, device_id, user_id, cross_app) SELECT $1, $2, user_id, false
                FROM created
            \(pointed)), played AS (
                INSERT INTO app_users (app_id, user_id) SELECT $1, user_id FROM chosen ON CONFLICT DO NOTHING
            ), device AS (
                INSERT INTO devices (user_id, device_id, name, platform) SELECT user_id, $2, $5, $6 FROM chosen
                ON CONFLICT (user_id, device_id) DO UPDATE SET last_seen_at = now(),
                    name = CASE WHEN EXCLUDED.name = '' THEN devices.name ELSE EXCLUDED.name END,
                    platform = CASE WHEN EXCLUDED.platform = '' THEN devices.platform ELSE EXCLUDED.platform END
            ), session AS (
                INSERT INTO sessions (id, user_id, app_id, device_id, expires_at)
                SELECT $7, user_id, $1, $2, $8 FROM chosen WHERE NOT EXISTS (SELECT 1 FROM banned) RETURNING id
            ), token AS (
                INSERT INTO refresh_tokens (token_hash, session_id, generation) SELECT $9, id, 0 FROM session
            )
            SELECT chosen.source, chosen.user_id AS chosen_user_id, created.created_at AS new_created_at,
                created.updated_at AS new_updated_at, banned.reason AS ban_reason, banned.until_at AS ban_until
            FROM chosen LEFT JOIN created ON true LEFT JOIN banned ON true
            """
    }

    /// Logs the device in to the application: its known user, else its cross-app player when `crossAppPublisher`
    /// is given, else a new anonymous user; records the app use and the device and opens a session, unless the
    /// user is banned at `now` (the record then carries the ban).
    ///
    /// ABORTED when a concurrent first login of the same device won (the client retries and finds its user).
    func login(
        appID: RaveID, crossAppPublisher: RaveID?, device: IdentityV1.DeviceInfo, sessionLifetime: TimeInterval,
        now: Date
    ) async throws -> GuestLoginRecord {
        let sessionID = RaveID.random()
        let token = try OpaqueToken.generate()
        let rows: PostgresRows
        do {
            rows = try await database.execute(
                crossAppPublisher == nil ? Self.guestLoginWithinApp : Self.guestLogin,
                [
                    appID, device.deviceId, crossAppPublisher, RaveID.random(), device.name, device.platform,
                    sessionID, Date().addingTimeInterval(sessionLifetime), OpaqueToken.hash(token), now,
                ])
        } catch let error as PostgresError where error.sqlState == "23505" && error.constraint == "device_logins_pkey" {
            throw IdentityError.aborted("another login of this device is in progress; retry")
        }
        guard let row = rows.first, let source = GuestLoginRecord.Source(rawValue: try row.decode(column: "source"))
        else { throw IdentityError.internalError("the guest login statement chose no user") }
        let userID = try row.decode(RaveID.self, column: "chosen_user_id")
        if let reason = try row.decode(String?.self, column: "ban_reason") {
            let ban = BanRecord(reason: reason, until: try row.decode(Date?.self, column: "ban_until"))
            let user = try await knownUser(userID, appID: appID).user
            return GuestLoginRecord(source: source, user: user, sessionID: sessionID, refreshToken: "", ban: ban)
        }
        let user: UserRecord
        var ban: BanRecord? = nil
        var deletionScheduled = false
        if source == .created {
            // The new row is not visible to the statement that inserted it; it is a blank anonymous user.
            user = UserRecord(
                id: userID, emailVerified: false, hasPassword: false, providers: [], twoFactorEnabled: false,
                createdAt: try row.decode(column: "new_created_at"),
                updatedAt: try row.decode(column: "new_updated_at"),
                hasGlobalNameOrPicture: false)
        } else {
            (user, ban, deletionScheduled) = try await knownUser(userID, appID: appID)
        }
        return GuestLoginRecord(
            source: source, user: user, sessionID: sessionID, refreshToken: token, ban: ban,
            deletionScheduled: deletionScheduled)
    }

    /// The device's user as the app shows it, and the ban stored for them, read after the login committed (so a
    /// ban that committed meanwhile is seen).
    ///
    /// A merge that committed since the login statement moved the new session to the merge's target, so a user merged
    /// away meanwhile continues as that target.
    private func knownUser(
        _ userID: RaveID, appID: RaveID
    ) async throws -> (user: UserRecord, ban: BanRecord?, deletionScheduled: Bool) {
        let users = UserStore(database: database)
        if let found = try await users.userWithBan(userID, appID: appID) { return found }
        guard let target = try await users.canonicalIDs([userID])[userID],
            let found = try await users.userWithBan(target, appID: appID)
        else { throw IdentityError.notFound("no user \(userID.hex)") }
        return found
    }
}
