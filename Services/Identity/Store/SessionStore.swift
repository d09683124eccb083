import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// A session's refresh-token state, read when a refresh token is presented.
struct RefreshTokenLookup: Sendable {
    var sessionID: RaveID
    var userID: RaveID
    var appID: RaveID
    var tokenGeneration: Int32
    var sessionGeneration: Int32
    var revoked: Bool
    var expiresAt: Date
}

/// Sessions (refresh-token families), refresh tokens, devices and which user a device plays as per app.
struct SessionStore: Sendable {
    let database: any PostgresQueryable

    static let insertSession = PostgresStatement(
        name: "identity_insert_session",
        sql: "INSERT INTO sessions (id, user_id, app_id, device_id, expires_at) VALUES ($1, $2, $3, $4, $5)")
    static let insertRefreshToken = PostgresStatement(
        name: "identity_insert_refresh_token",
        sql: "INSERT INTO refresh_tokens (token_hash, session_id, generation) VALUES ($1, $2, $3)")
    static let lookupRefreshToken = PostgresStatement(
        name: "identity_lookup_refresh_token",
        sql: """
            SELECT s.id, s.user_id, s.app_id, r.generation AS token_generation, s.generation AS session_generation,
                s.revoked_at IS NOT NULL AS revoked, s.expires_at
            FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id
            WHERE r.token_hash = $1 FOR UPDATE OF s
            """)
    static let rotate = PostgresStatement(
        name: "identity_rotate_session",
        sql: """
            UPDATE sessions SET generation = generation + 1, last_used_at = now(), expires_at = $2
            WHERE id = $1 RETURNING generation
            """)
    static let revoke = PostgresStatement(
        name: "identity_revoke_session",
        sql: """
            UPDATE sessions SET revoked_at = now(), revoked_reason = $3
            WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING device_id, app_id
            """)
    static let selectSessions = PostgresStatement(
        name: "identity_select_sessions",
        sql: """
            SELECT id, app_id, device_id, created_at, last_used_at FROM sessions
            WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now() ORDER BY created_at
            """)
    static let upsertDevice = PostgresStatement(
        name: "identity_upsert_device",
        sql: """
            INSERT INTO devices (user_id, device_id, name, platform) VALUES ($1, $2, $3, $4)
            ON CONFLICT (user_id, device_id) DO UPDATE SET last_seen_at = now(),
                name = CASE WHEN EXCLUDED.name = '' THEN devices.name ELSE EXCLUDED.name END,
                platform = CASE WHEN EXCLUDED.platform = '' THEN devices.platform ELSE EXCLUDED.platform END
            """)
    static let selectDevices = PostgresStatement(
        name: "identity_select_devices",
        sql: """
            SELECT device_id, name, platform, first_seen_at, last_seen_at FROM devices
            WHERE user_id = $1 ORDER BY first_seen_at
            """)

    /// Starts a session and returns its first refresh token.
    func createSession(
        userID: RaveID, appID: RaveID, deviceID: String, lifetime: TimeInterval
    ) async throws -> (sessionID: RaveID, refreshToken: String) {
        let sessionID = RaveID.random()
        _ = try await database.execute(
            Self.insertSession, [sessionID, userID, appID, deviceID, Date().addingTimeInterval(lifetime)])
        let token = try OpaqueToken.generate()
        _ = try await database.execute(Self.insertRefreshToken, [OpaqueToken.hash(token), sessionID, Int32(0)])
        return (sessionID, token)
    }

    /// Locks the token's session row, so two refreshes of one token cannot both succeed.
    func lookup(refreshToken: String) async throws -> RefreshTokenLookup? {
        guard let row = try await database.execute(Self.lookupRefreshToken, [OpaqueToken.hash(refreshToken)]).first
        else { return nil }
        return RefreshTokenLookup(
            sessionID: try row.decode(column: "id"), userID: try row.decode(column: "user_id"),
            appID: try row.decode(column: "app_id"), tokenGeneration: try row.decode(column: "token_generation"),
            sessionGeneration: try row.decode(column: "session_generation"), revoked: try row.decode(column: "revoked"),
            expiresAt: try row.decode(column: "expires_at"))
    }

    /// Retires every earlier refresh token of the session and returns the new one.
    func rotate(sessionID: RaveID, lifetime: TimeInterval) async throws -> String {
        let rows = try await database.execute(Self.rotate, [sessionID, Date().addingTimeInterval(lifetime)])
        let generation = try rows[0].decode(Int32.self, column: "generation")
        let token = try OpaqueToken.generate()
        _ = try await database.execute(Self.insertRefreshToken, [OpaqueToken.hash(token), sessionID, generation])
        return token
    }

    /// Revokes a session of `userID`; returns its device and app, or nil when there was no such live session.
    @discardableResult
    func revoke(
        sessionID: RaveID, userID: RaveID, reason: String
    ) async throws -> (deviceID: String, appID: RaveID)? {
        guard let row = try await database.execute(Self.revoke, [sessionID, userID, reason]).first else { return nil }
        return (try row.decode(column: "device_id"), try row.decode(column: "app_id"))
    }

    func sessions(userID: RaveID, currentSessionID: String) async throws -> [IdentityV1.Session] {
        return try await database.execute(Self.selectSessions, [userID]).map { row in
            let id = try row.decode(RaveID.self, column: "id")
            return IdentityV1.Session(
                sessionId: id.hex, appId: try row.decode(RaveID.self, column: "app_id").hex,
                deviceId: try row.decode(column: "device_id"),
                createdAtUnixMs: try row.decode(Date.self, column: "created_at").unixMilliseconds,
                lastUsedAtUnixMs: try row.decode(Date.self, column: "last_used_at").unixMilliseconds,
                current: id.hex == currentSessionID)
        }
    }

    func recordDevice(userID: RaveID, device: IdentityV1.DeviceInfo) async throws {
        _ = try await database.execute(Self.upsertDevice, [userID, device.deviceId, device.name, device.platform])
    }

    func devices(userID: RaveID) async throws -> [IdentityV1.Device] {
        return try await database.execute(Self.selectDevices, [userID]).map { row in
            IdentityV1.Device(
                deviceId: try row.decode(column: "device_id"), name: try row.decode(column: "name"),
                platform: try row.decode(column: "platform"),
                firstSeenAtUnixMs: try row.decode(Date.self, column: "first_seen_at").unixMilliseconds,
                lastSeenAtUnixMs: try row.decode(Date.self, column: "last_seen_at").unixMilliseconds)
        }
    }
}
