import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// A session's refresh-token state as it was when a refresh token was presented (before any rotation).
struct RefreshTokenLookup: Sendable {
    var sessionID: RaveID
    var userID: RaveID
    var appID: RaveID
    var tokenGeneration: Int32
    var sessionGeneration: Int32
    var revoked: Bool
    var expiresAt: Date
    /// The user's account state, read with the token so a refresh issues its access token without another query;
    /// nil when the user was merged away.
    var accountState: IdentityV1.AccountState?
}

/// A session a refresh rotated, and its new refresh token.
struct RotatedSession: Sendable {
    var session: RefreshTokenLookup
    var refreshToken: String
}

/// Sessions (refresh-token families), refresh tokens, devices and which user a device plays as per app.
struct SessionStore: Sendable {
    let database: any PostgresQueryable

    /// PostgreSQL's SQLSTATE for a statement rolled back to break a deadlock.
    static let deadlockDetected = "40P01"

    /// The common case alone: rotates the sessions of tokens that are the latest of live sessions, many in one
    /// statement (`IdentityDependencies.rotations`); `$1` the presented tokens' hashes and `$4` the new ones, in
    /// pairs, and a row back per rotated session with the pair's 1-based `position`.
    ///
    /// Applies when the session is unexpired and its user live, and returns what the access token needs; nothing
    /// to classify, so it costs PostgreSQL less than `refresh`. When it rotates nothing, `refresh` decides why.
    ///
    /// The sessions are locked in id order before any is updated, so two of these statements running at once (two
    /// groups, or two replicas, each with a token of the same two sessions) wait for each other in one order and
    /// never deadlock. A statement that locks several sessions in another order (a user's sessions revoked at once)
    /// can still meet one; PostgreSQL then rolls one back, and when it is this one `rotate` answers nil for every
    /// token, so each falls back to `refresh`, which locks one session.
    ///
    /// Two refreshes of one token cannot both rotate: in one statement, `UPDATE … FROM` changes a row once whatever
    /// number of pairs join it; in two, the second waits for the first's row lock, then rechecks the session's
    /// generation against the committed row. Either way the other pair gets no row, and `refresh` finds the old
    /// token and revokes the family.
    static let rotateMany = PostgresStatement(
        name: "identity_rotate_sessions",
        sql: """
            WITH asked AS (
                SELECT t.position, t.next_hash, r.session_id, r.generation
                FROM unnest($1::bytea[], $4::bytea[]) WITH ORDINALITY AS t(token_hash, next_hash, position)
                JOIN refresh_tokens r ON r.token_hash = t.token_hash
            ), locked AS (
                SELECT s.id FROM sessions s WHERE s.id IN (SELECT session_id FROM asked) ORDER BY s.id FOR UPDATE
            ), rotated AS (
                UPDATE sessions s SET generation = s.generation + 1, last_used_at = now(), expires_at = $3
                FROM asked a, locked l, users u
                WHERE s.id = l.id AND a.session_id = l.id AND s.generation = a.generation
                    AND s.revoked_at IS NULL AND s.expires_at >= $2 AND u.id = s.user_id AND u.merged_into IS NULL
                    AND u.deleted_at IS NULL
                RETURNING a.position, a.next_hash, s.id, s.user_id, s.app_id, s.generation,
                    \(UserStore.accountStateColumns)
            ), stored AS (
                INSERT INTO refresh_tokens (token_hash, session_id, generation)
                SELECT next_hash, id, generation FROM rotated
            )
            SELECT position, id, user_id, app_id, generation, has_credential, has_personal_data FROM rotated
            """)
    /// Looks a refresh token up and, in the same statement, rotates its session when the token is the latest of a
    /// live session, or revokes the session when an older token came back; one round trip and no transaction.
    ///
    /// The session row is locked first, so two refreshes of one token cannot both rotate: the second sees the new
    /// generation once the first commits, and counts as reuse.
    static let refresh = PostgresStatement(
        name: "identity_refresh_session",
        sql: """
            WITH found AS (
                SELECT s.id, s.user_id, s.app_id, r.generation AS token_generation,
                    s.generation AS session_generation, s.revoked_at IS NOT NULL AS revoked, s.expires_at,
                    u.merged_into IS NULL AND u.deleted_at IS NULL AS user_live, \(UserStore.accountStateColumns)
                FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id JOIN users u ON u.id = s.user_id
                WHERE r.token_hash = $1 FOR UPDATE OF s
            ), rotated AS (
                UPDATE sessions SET generation = sessions.generation + 1, last_used_at = now(), expires_at = $3
                FROM found WHERE sessions.id = found.id AND NOT found.revoked
                    AND found.token_generation = found.session_generation AND found.expires_at >= $2
                    AND found.user_live
                RETURNING sessions.id, sessions.generation
            ), stored AS (
                INSERT INTO refresh_tokens (token_hash, session_id, generation) SELECT $4, id, generation FROM rotated
            ), ended AS (
                UPDATE sessions SET revoked_at = now(), revoked_reason = 'reuse'
                FROM found WHERE sessions.id = found.id AND NOT found.revoked
                    AND found.token_generation <> found.session_generation
                RETURNING sessions.id
            ), \(revocationFeed)
            SELECT found.*, EXISTS (SELECT 1 FROM rotated) AS rotated FROM found
            """)
    /// Starts a session and records the app use and the device in one round trip: a login's writes are
    /// independent, so they need not wait for each other.
    static let openSession = PostgresStatement(
        name: "identity_open_session",
        sql: """
            WITH played AS (
                INSERT INTO app_users (app_id, user_id) VALUES ($2, $1) ON CONFLICT DO NOTHING
            ), device AS (
                INSERT INTO devices (user_id, device_id, name, platform) VALUES ($1, $3, $4, $5)
                ON CONFLICT (user_id, device_id) DO UPDATE SET last_seen_at = now(),
                    name = CASE WHEN EXCLUDED.name = '' THEN devices.name ELSE EXCLUDED.name END,
                    platform = CASE WHEN EXCLUDED.platform = '' THEN devices.platform ELSE EXCLUDED.platform END
            ), session AS (
                INSERT INTO sessions (id, user_id, app_id, device_id, expires_at) VALUES ($6, $1, $2, $3, $7)
                RETURNING id
            )
            INSERT INTO refresh_tokens (token_hash, session_id, generation) SELECT $8, id, 0 FROM session
            """)
    /// Common table expressions that publish the sessions a statement ended (a CTE `ended` returning their `id`) on
    /// the revocation feed (`session_revocations`, read by `ListRevocations`), in the same statement.
    ///
    /// The counter row is updated only when something ended; its row lock, held until commit, hands out numbers in
    /// commit order (migration 0004), so the feed's cursor never skips a revocation that commits late.
    static let revocationFeed = """
        numbered AS (
            UPDATE revocation_counter SET last = last + 1 WHERE EXISTS (SELECT 1 FROM ended) RETURNING last
        ), published AS (
            INSERT INTO session_revocations (seq, session_id) SELECT numbered.last, ended.id FROM ended, numbered
        )
        """
    static let revoke = PostgresStatement(
        name: "identity_revoke_session",
        sql: """
            WITH ended AS (
                UPDATE sessions SET revoked_at = now(), revoked_reason = $3
                WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING id, device_id, app_id
            ), \(revocationFeed)
            SELECT device_id, app_id FROM ended
            """)
    /// Ends every live session of a user but one (the caller's, which may be NULL): a two-factor change, a password
    /// change (the caller's goes on), a ban (none goes on).
    static let revokeOthers = PostgresStatement(
        name: "identity_revoke_other_sessions",
        sql: """
            WITH ended AS (
                UPDATE sessions SET revoked_at = now(), revoked_reason = $3
                WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now() AND id IS DISTINCT FROM $2
                RETURNING id
            ), \(revocationFeed)
            SELECT count(*) AS ended FROM ended
            """)
    /// The feed after a cursor (through `$4` when not NULL): revocations whose access tokens may still be live
    /// (ended less than `$2` seconds ago) and recent merge notices, in commit order; `$3` NULL is no limit.
    static let selectRevocations = PostgresStatement(
        name: "identity_select_revocations",
        sql: """
            SELECT seq, session_id, NULL::uuid AS merged_user_id, revoked_at FROM session_revocations
            WHERE seq > $1 AND seq <= coalesce($4, seq) AND revoked_at > now() - make_interval(secs => $2)
            UNION ALL
            SELECT seq, NULL::uuid, user_id, noted_at FROM merge_notices
            WHERE seq > $1 AND seq <= coalesce($4, seq) AND noted_at > now() - make_interval(secs => $2)
            ORDER BY seq LIMIT $3
            """)
    /// Whether a session has ended, read with the caller's canonical user id (every player method asks).
    static let selectCaller = PostgresStatement(
        name: "identity_select_caller",
        sql: """
            SELECT coalesce(u.merged_into, u.id) AS canonical,
                coalesce((SELECT s.revoked_at IS NOT NULL FROM sessions s WHERE s.id = $2), true) AS ended
            FROM users u WHERE u.id = $1 AND u.deleted_at IS NULL
            """)
    /// Whether the session `$1` (live) logged in less than `$2` seconds ago (refreshes do not count).
    static let selectRecentLogin = PostgresStatement(
        name: "identity_select_recent_login",
        sql: """
            SELECT created_at > now() - make_interval(secs => $2) AS recent FROM sessions
            WHERE id = $1 AND revoked_at IS NULL
            """)
    static let selectLiveSession = PostgresStatement(
        name: "identity_select_live_session",
        sql: "SELECT 1 FROM sessions WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL AND expires_at > now()")
    static let selectSessions = PostgresStatement(
        name: "identity_select_sessions",
        sql: """
            SELECT id, app_id, device_id, created_at, last_used_at FROM sessions
            WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now() ORDER BY created_at
            """)
    static let selectDevices = PostgresStatement(
        name: "identity_select_devices",
        sql: """
            SELECT device_id, name, platform, first_seen_at, last_seen_at FROM devices
            WHERE user_id = $1 ORDER BY first_seen_at
            """)

    /// Records that the user played the app on the device and starts a session; returns its first refresh token.
    func openSession(
        userID: RaveID, appID: RaveID, device: IdentityV1.DeviceInfo, lifetime: TimeInterval
    ) async throws -> (sessionID: RaveID, refreshToken: String) {
        let sessionID = RaveID.random()
        let token = try OpaqueToken.generate()
        _ = try await database.execute(
            Self.openSession,
            [
                userID, appID, device.deviceId, device.name, device.platform, sessionID,
                Date().addingTimeInterval(lifetime), OpaqueToken.hash(token),
            ])
        return (sessionID, token)
    }

    /// Rotates the session of each of `refreshTokens` that is the latest token of a live session, in one statement:
    /// one answer per token, in order, nil where it rotated nothing (then `refresh` tells why).
    func rotate(refreshTokens: [String], lifetime: TimeInterval) async throws -> [RotatedSession?] {
        let next = try refreshTokens.map { _ in try OpaqueToken.generate() }
        let now = Date()
        let rows: PostgresRows
        do {
            rows = try await database.execute(
                Self.rotateMany,
                [
                    refreshTokens.map(OpaqueToken.hash), now, now.addingTimeInterval(lifetime),
                    next.map(OpaqueToken.hash),
                ])
        } catch let error as PostgresError where error.sqlState == Self.deadlockDetected {
            // Rolled back, so nothing rotated: `refresh` decides each token, one session at a time.
            return Array(repeating: nil, count: refreshTokens.count)
        }
        var answers = [RotatedSession?](repeating: nil, count: refreshTokens.count)
        for row in rows {
            let index = Int(try row.decode(Int64.self, column: "position")) - 1
            guard answers.indices.contains(index) else { continue }
            let generation = try row.decode(Int32.self, column: "generation")
            let session = RefreshTokenLookup(
                sessionID: try row.decode(column: "id"), userID: try row.decode(column: "user_id"),
                appID: try row.decode(column: "app_id"), tokenGeneration: generation, sessionGeneration: generation,
                revoked: false, expiresAt: now.addingTimeInterval(lifetime),
                accountState: try UserStore.globalAccountState(row))
            answers[index] = RotatedSession(session: session, refreshToken: next[index])
        }
        return answers
    }

    /// What the refresh token led to, and the session's new refresh token when it was rotated.
    ///
    /// Nil for an unknown token.
    func refresh(
        refreshToken: String, lifetime: TimeInterval
    ) async throws -> (found: RefreshTokenLookup, rotatedTo: String?)? {
        let next = try OpaqueToken.generate()
        let now = Date()
        let rows = try await database.execute(
            Self.refresh,
            [OpaqueToken.hash(refreshToken), now, now.addingTimeInterval(lifetime), OpaqueToken.hash(next)])
        guard let row = rows.first else { return nil }
        let found = RefreshTokenLookup(
            sessionID: try row.decode(column: "id"), userID: try row.decode(column: "user_id"),
            appID: try row.decode(column: "app_id"), tokenGeneration: try row.decode(column: "token_generation"),
            sessionGeneration: try row.decode(column: "session_generation"), revoked: try row.decode(column: "revoked"),
            expiresAt: try row.decode(column: "expires_at"),
            accountState: try row.decode(Bool.self, column: "user_live") ? UserStore.globalAccountState(row) : nil)
        return (found, try row.decode(Bool.self, column: "rotated") ? next : nil)
    }

    /// Whether the live session `sessionID` logged in within the last `seconds` (by the database's clock, which
    /// stamped the login).
    func loggedInRecently(sessionID: RaveID, seconds: TimeInterval) async throws -> Bool {
        try await database.execute(Self.selectRecentLogin, [sessionID, seconds]).first?.decode(
            Bool.self, column: "recent") ?? false
    }

    /// Whether `sessionID` is a live (unrevoked, unexpired) session of `userID`.
    func isLive(sessionID: RaveID, userID: RaveID) async throws -> Bool {
        try await !database.execute(Self.selectLiveSession, [sessionID, userID]).isEmpty
    }

    /// Revokes a session of `userID`; returns its device and app, or nil when there was no such live session.
    @discardableResult
    func revoke(
        sessionID: RaveID, userID: RaveID, reason: String
    ) async throws -> (deviceID: String, appID: RaveID)? {
        guard let row = try await database.execute(Self.revoke, [sessionID, userID, reason]).first else { return nil }
        return (try row.decode(column: "device_id"), try row.decode(column: "app_id"))
    }

    /// Ends every live session of `userID` except `keeping` (nil: all of them); returns how many ended.
    @discardableResult
    func revokeOthers(userID: RaveID, keeping: RaveID?, reason: String) async throws -> Int {
        let rows = try await database.execute(Self.revokeOthers, [userID, keeping, reason])
        return Int(try rows.first?.decode(Int64.self, column: "ended") ?? 0)
    }

    /// An entry of the revocation feed: an ended session, or a user merged away.
    struct Revocation: Sendable, Hashable {
        var cursor: UInt64
        var sessionID: RaveID?
        var mergedUserID: RaveID?
        var revokedAt: Date
    }

    /// A page of the feed after `cursor`, in commit order, and whether more follows.
    ///
    /// The sessions one statement ended share a number, and a reader's next cursor is the page's last number, so a
    /// page never ends inside such a group: it stops before the group the limit cuts, or, when that group alone
    /// is larger than `limit` (a user signed in on more devices than a page holds), it is that whole group.
    func revocationPage(
        after cursor: UInt64, horizon: Int64, limit: Int
    ) async throws -> (revocations: [Revocation], more: Bool) {
        let found = try await revocations(after: cursor, through: nil, horizon: horizon, limit: limit + 1)
        guard found.count > limit else { return (found, false) }
        let cut = found[limit].cursor
        let complete = found.prefix { $0.cursor != cut }
        if !complete.isEmpty { return (Array(complete), true) }
        let group = try await revocations(after: cursor, through: cut, horizon: horizon, limit: nil)
        let next = try await revocations(after: cut, through: nil, horizon: horizon, limit: 1)
        return (group, !next.isEmpty)
    }

    /// Feed entries after `cursor` (up to `through`, when given) from less than `horizon` seconds ago.
    private func revocations(
        after cursor: UInt64, through last: UInt64?, horizon: Int64, limit: Int?
    ) async throws -> [Revocation] {
        let rows = try await database.execute(
            Self.selectRevocations,
            [
                Int64(clamping: cursor), Double(horizon), limit.map { Int64($0) },
                last.map { Int64(clamping: $0) },
            ])
        return try rows.map { row in
            Revocation(
                cursor: UInt64(try row.decode(Int64.self, column: "seq")),
                sessionID: try row.decode(RaveID?.self, column: "session_id"),
                mergedUserID: try row.decode(RaveID?.self, column: "merged_user_id"),
                revokedAt: try row.decode(column: "revoked_at"))
        }
    }

    /// The canonical id of a caller's user (a merged source resolves to its target) and whether the caller's
    /// session has ended (an unknown session counts as ended); nil when the user does not exist.
    func caller(userID: RaveID, sessionID: RaveID) async throws -> (canonical: RaveID, ended: Bool)? {
        guard let row = try await database.execute(Self.selectCaller, [userID, sessionID]).first else { return nil }
        return (try row.decode(column: "canonical"), try row.decode(column: "ended"))
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
