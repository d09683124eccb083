import Foundation
import RaveMessages
import RavePostgres

/// A validated registration, ready to store.
struct TokenRegistration: Sendable {
    var appID: String
    var userID: RaveID
    var platform: PushV1.Platform
    var token: String
    var sandbox: Bool
    var consent: PushV1.Consent
    var options: PushV1.NotificationOptions
    var country: String
    var language: String
    var timeZone: String
}

/// Device tokens: registration, consent changes, removal, and the lookups sending needs.
struct TokenStore: Sendable {
    static let columns = """
        platform, token, user_id, sandbox, consent_push, consent_advertising, consent_night_advertising, \
        option_foreground, option_badge, option_sound, country, language, time_zone, registered_at
        """

    // A token belongs to one user: registering it again moves it to the newest registrant.
    static let upsert = PostgresStatement(
        name: "push_upsert_token",
        sql: """
            INSERT INTO device_tokens (token_id, app_id, user_id, platform, token, sandbox, consent_push,
                consent_advertising, consent_night_advertising, option_foreground, option_badge, option_sound,
                country, language, time_zone, registered_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
            ON CONFLICT (platform, token) DO UPDATE SET app_id = excluded.app_id, user_id = excluded.user_id,
                sandbox = excluded.sandbox, consent_push = excluded.consent_push,
                consent_advertising = excluded.consent_advertising,
                consent_night_advertising = excluded.consent_night_advertising,
                option_foreground = excluded.option_foreground, option_badge = excluded.option_badge,
                option_sound = excluded.option_sound, country = excluded.country, language = excluded.language,
                time_zone = excluded.time_zone, registered_at = excluded.registered_at
            RETURNING \(columns)
            """)
    static let selectByUser = PostgresStatement(
        name: "push_select_tokens_by_user",
        sql: """
            SELECT \(columns) FROM device_tokens WHERE app_id = $1 AND user_id = $2
            ORDER BY registered_at DESC, token
            """)
    static let updateConsent = PostgresStatement(
        name: "push_update_consent",
        sql: """
            UPDATE device_tokens SET consent_push = $4, consent_advertising = $5, consent_night_advertising = $6
            WHERE app_id = $1 AND user_id = $2 AND ($3 = '' OR token = $3)
            """)
    static let delete = PostgresStatement(
        name: "push_delete_token",
        sql: "DELETE FROM device_tokens WHERE app_id = $1 AND user_id = $2 AND ($3 = '' OR token = $3)")
    /// Removes a dead token unless it was registered again after the provider declared it dead.
    static let deleteDead = PostgresStatement(
        name: "push_delete_dead_token",
        sql: "DELETE FROM device_tokens WHERE platform = $1 AND token = $2 AND registered_at <= $3")

    func register(
        _ registration: TokenRegistration, at now: Date, on database: some PostgresQueryable
    )
        async throws -> PushV1.TokenInfo
    {
        let consent = registration.consent
        let options = registration.options
        let rows = try await database.execute(
            Self.upsert,
            [
                RaveID.random(), registration.appID, registration.userID, registration.platform.rawValue,
                registration.token, registration.sandbox, consent.push, consent.advertising,
                consent.nightAdvertising, options.foreground, options.badge, options.sound, registration.country,
                registration.language, registration.timeZone, now,
            ])
        return try Self.info(rows[0])
    }

    func tokens(app: String, user: RaveID, on database: some PostgresQueryable) async throws -> [PushV1.TokenInfo] {
        try await database.execute(Self.selectByUser, [app, user]).map(Self.info)
    }

    /// Changes consent on one token (or all, for an empty token); returns how many changed.
    func updateConsent(
        app: String, user: RaveID, token: String, consent: PushV1.Consent, on database: some PostgresQueryable
    ) async throws -> Int {
        try await database.execute(
            Self.updateConsent,
            [app, user, token, consent.push, consent.advertising, consent.nightAdvertising]
        ).affectedRowCount
    }

    func unregister(app: String, user: RaveID, token: String, on database: some PostgresQueryable) async throws -> Int {
        try await database.execute(Self.delete, [app, user, token]).affectedRowCount
    }

    /// Forgets a token the provider rejected, unless it was registered again after `deadSince`.
    @discardableResult
    func removeDead(
        platform: PushV1.Platform, token: String, deadSince: Date, on database: some PostgresQueryable
    ) async throws -> Bool {
        try await database.execute(Self.deleteDead, [platform.rawValue, token, deadSince]).affectedRowCount > 0
    }

    static func info(_ row: PostgresRow) throws -> PushV1.TokenInfo {
        var info = PushV1.TokenInfo()
        info.platform = PushV1.Platform(rawValue: Int32(try row.decode(Int64.self, at: 0)))
        info.token = try row.decode(String.self, at: 1)
        info.userId = try row.decode(RaveID.self, at: 2).hex
        info.sandbox = try row.decode(Bool.self, at: 3)
        info.consent = PushV1.Consent(
            push: try row.decode(Bool.self, at: 4), advertising: try row.decode(Bool.self, at: 5),
            nightAdvertising: try row.decode(Bool.self, at: 6))
        info.options = PushV1.NotificationOptions(
            foreground: try row.decode(Bool.self, at: 7), badge: try row.decode(Bool.self, at: 8),
            sound: try row.decode(Bool.self, at: 9))
        info.country = try row.decode(String.self, at: 10)
        info.language = try row.decode(String.self, at: 11)
        info.timeZone = try row.decode(String.self, at: 12)
        info.registeredAtMicros = try row.decode(PostgresTimestamp.self, at: 13).microsecondsSinceEpoch
        return info
    }
}
