import Foundation
import RaveGatewayRules
import RaveMessages
import RavePostgres
import RaveRPC

/// An operator account as stored (docs/identity.md, "Operators").
struct OperatorRecord: Sendable {
    var id: RaveID
    var email: String
    var grant: OperatorToken.Grant
    var passwordHash: String?
    var enrolled: Bool
    var disabled: Bool
    var createdAt: Date

    var message: IdentityV1.Operator {
        IdentityV1.Operator(
            operatorId: id.hex, email: email, role: Operators.message(grant.role),
            publisherId: grant.publisherID ?? "", allPublishers: grant.publisherID == nil, enrolled: enrolled,
            disabled: disabled, createdAtUnixMs: createdAt.unixMilliseconds)
    }
}

/// An operator session's state as a refresh token found it (locked for the rest of the transaction).
struct OperatorRefreshLookup: Sendable {
    var sessionID: RaveID
    var operatorID: RaveID
    var tokenGeneration: Int32
    var sessionGeneration: Int32
    var revoked: Bool
    var expiresAt: Date
    var lastUsedAt: Date
}

/// Operator accounts, their TOTP secrets (sealed for their row), sessions and refresh tokens.
///
/// Ending sessions
/// publishes them on the revocation feed with `SessionStore.revocationFeed`, the players' own path.
struct OperatorStore: Sendable {
    let database: any PostgresQueryable

    static let columns = """
        id, email, role, publisher_id, password_hash, enrolled_at IS NOT NULL AS enrolled,
        disabled_at IS NOT NULL AS disabled, created_at
        """
    static let insert = PostgresStatement(
        name: "identity_insert_operator",
        sql: """
            INSERT INTO operators (id, email, role, publisher_id, enrolment_code_hash, enrolment_expires_at)
            VALUES ($1, $2, $3, $4, $5, $6) RETURNING \(columns)
            """)
    static let selectByID = PostgresStatement(
        name: "identity_select_operator", sql: "SELECT \(columns) FROM operators WHERE id = $1 FOR UPDATE")
    static let selectByEmail = PostgresStatement(
        name: "identity_select_operator_by_email",
        sql: "SELECT \(columns) FROM operators WHERE lower(email) = lower($1)")
    static let selectAll = PostgresStatement(
        name: "identity_select_operators",
        sql: "SELECT \(columns) FROM operators WHERE $1::uuid IS NULL OR publisher_id = $1 ORDER BY lower(email), id")
    /// The operator an unexpired enrolment code of an account not yet enrolled belongs to, locked.
    static let selectByEnrolmentCode = PostgresStatement(
        name: "identity_select_operator_by_enrolment_code",
        sql: """
            SELECT \(columns) FROM operators WHERE enrolment_code_hash = $1 AND enrolment_expires_at > $2
                AND enrolled_at IS NULL AND disabled_at IS NULL
            FOR UPDATE
            """)
    static let setCredentials = PostgresStatement(
        name: "identity_set_operator_credentials",
        sql: "UPDATE operators SET password_hash = $2, totp_secret_sealed = $3, totp_last_step = 0 WHERE id = $1")
    static let selectTOTP = PostgresStatement(
        name: "identity_select_operator_totp",
        sql: "SELECT totp_secret_sealed, totp_last_step FROM operators WHERE id = $1 FOR UPDATE")
    static let acceptStep = PostgresStatement(
        name: "identity_accept_operator_totp_step",
        sql: "UPDATE operators SET totp_last_step = $2 WHERE id = $1 AND totp_last_step < $2")
    /// The first login enrols the account and spends its enrolment code.
    static let markEnrolled = PostgresStatement(
        name: "identity_mark_operator_enrolled",
        sql: """
            UPDATE operators SET enrolled_at = now(), enrolment_code_hash = NULL, enrolment_expires_at = NULL
            WHERE id = $1 AND enrolled_at IS NULL
            """)
    static let setGrant = PostgresStatement(
        name: "identity_set_operator_grant",
        sql: "UPDATE operators SET role = $2, publisher_id = $3 WHERE id = $1 RETURNING \(columns)")
    static let disable = PostgresStatement(
        name: "identity_disable_operator",
        sql: """
            UPDATE operators SET disabled_at = coalesce(disabled_at, now()), enrolment_code_hash = NULL
            WHERE id = $1 RETURNING \(columns)
            """)
    static let openSession = PostgresStatement(
        name: "identity_open_operator_session",
        sql: """
            WITH session AS (
                INSERT INTO operator_sessions (id, operator_id, expires_at, created_at, last_used_at)
                VALUES ($1, $2, $3, $5, $5) RETURNING id
            )
            INSERT INTO operator_refresh_tokens (token_hash, session_id, generation) SELECT $4, id, 0 FROM session
            """)
    static let selectRefresh = PostgresStatement(
        name: "identity_select_operator_refresh",
        sql: """
            SELECT s.id, s.operator_id, r.generation AS token_generation, s.generation AS session_generation,
                s.revoked_at IS NOT NULL AS revoked, s.expires_at, s.last_used_at
            FROM operator_refresh_tokens r JOIN operator_sessions s ON s.id = r.session_id
            WHERE r.token_hash = $1 FOR UPDATE OF s
            """)
    static let rotate = PostgresStatement(
        name: "identity_rotate_operator_session",
        sql: """
            WITH rotated AS (
                UPDATE operator_sessions SET generation = generation + 1, last_used_at = $2 WHERE id = $1
                RETURNING id, generation
            )
            INSERT INTO operator_refresh_tokens (token_hash, session_id, generation) SELECT $3, id, generation FROM rotated
            """)
    static let revokeSession = PostgresStatement(
        name: "identity_revoke_operator_session",
        sql: """
            WITH ended AS (
                UPDATE operator_sessions SET revoked_at = now(), revoked_reason = $2
                WHERE id = $1 AND revoked_at IS NULL RETURNING id
            ), \(SessionStore.revocationFeed)
            SELECT count(*) AS ended FROM ended
            """)
    static let revokeAll = PostgresStatement(
        name: "identity_revoke_operator_sessions",
        sql: """
            WITH ended AS (
                UPDATE operator_sessions SET revoked_at = now(), revoked_reason = $2
                WHERE operator_id = $1 AND revoked_at IS NULL AND expires_at > now() RETURNING id
            ), \(SessionStore.revocationFeed)
            SELECT count(*) AS ended FROM ended
            """)
    /// The operator of a live session (the admin caller check every admin method makes).
    static let selectSessionOperator = PostgresStatement(
        name: "identity_select_operator_of_session",
        sql: """
            SELECT \(columns),
                coalesce((SELECT s.revoked_at IS NULL AND s.expires_at > now() FROM operator_sessions s
                    WHERE s.id = $2 AND s.operator_id = operators.id), false) AS live
            FROM operators WHERE id = $1
            """)

    /// Creates an operator with an enrolment code (stored as its hash) that expires at `expiresAt`.
    func create(
        email: String, grant: OperatorToken.Grant, enrolmentCode: String, expiresAt: Date
    ) async throws -> OperatorRecord {
        do {
            let rows = try await database.execute(
                Self.insert,
                [
                    RaveID.random(), email, grant.role.description, grant.publisherID.flatMap { RaveID($0) },
                    OpaqueToken.hash(enrolmentCode), expiresAt,
                ])
            return try Self.record(rows[0])
        } catch let error as PostgresError where error.sqlState == "23505" {
            throw IdentityError.alreadyExists("an operator with the email \(Validation.quoted(email)) exists")
        } catch let error as PostgresError where error.sqlState == "23503" {
            throw IdentityError.notFound("no publisher \(grant.publisherID ?? "")")
        }
    }

    /// The operator, locked for the rest of the transaction; nil when there is none.
    func record(_ id: RaveID) async throws -> OperatorRecord? {
        try await database.execute(Self.selectByID, [id]).first.map(Self.record)
    }

    func record(email: String) async throws -> OperatorRecord? {
        try await database.execute(Self.selectByEmail, [email]).first.map(Self.record)
    }

    /// Every operator, or those acting for `publisher`.
    func all(publisher: RaveID?) async throws -> [OperatorRecord] {
        try await database.execute(Self.selectAll, [publisher]).map(Self.record)
    }

    func record(enrolmentCode: String, now: Date) async throws -> OperatorRecord? {
        try await database.execute(Self.selectByEnrolmentCode, [OpaqueToken.hash(enrolmentCode), now]).first.map(
            Self.record)
    }

    /// Stores a password hash and a TOTP secret, sealed for this operator's row.
    func setCredentials(_ id: RaveID, passwordHash: String, totpSecret: [UInt8], secrets: SecretKeyRing) async throws {
        let sealed = try secrets.seal(totpSecret, context: SecretSealing.operatorTOTPContext(id))
        _ = try await database.execute(Self.setCredentials, [id, passwordHash, sealed])
    }

    /// The operator's TOTP secret and last accepted step, locked; nil when none is set.
    func totp(_ id: RaveID, secrets: SecretKeyRing) async throws -> (secret: [UInt8], lastStep: Int64)? {
        guard let row = try await database.execute(Self.selectTOTP, [id]).first,
            let sealed = try row.decode([UInt8]?.self, column: "totp_secret_sealed")
        else { return nil }
        let lastStep = try row.decode(Int64.self, column: "totp_last_step")
        do {
            return (try secrets.open(sealed, context: SecretSealing.operatorTOTPContext(id)), lastStep)
        } catch {
            throw IdentityError.internalError(
                "the TOTP secret of operator \(id.hex) cannot be unsealed with RAVE_SECRET_KEY_FILE: " + error.message)
        }
    }

    /// Records `step` as used; false when it (or a later one) was used already.
    func acceptStep(_ id: RaveID, step: Int64) async throws -> Bool {
        try await database.execute(Self.acceptStep, [id, step]).affectedRowCount == 1
    }

    func markEnrolled(_ id: RaveID) async throws {
        _ = try await database.execute(Self.markEnrolled, [id])
    }

    func setGrant(_ id: RaveID, _ grant: OperatorToken.Grant) async throws -> OperatorRecord {
        let rows = try await database.execute(
            Self.setGrant, [id, grant.role.description, grant.publisherID.flatMap { RaveID($0) }])
        return try Self.record(rows[0])
    }

    func disable(_ id: RaveID) async throws -> OperatorRecord {
        try Self.record(try await database.execute(Self.disable, [id])[0])
    }

    /// Starts a session at `now` that ends at `expiresAt` whatever its use; returns its first refresh token.
    func openSession(
        operatorID: RaveID, now: Date, expiresAt: Date
    ) async throws -> (sessionID: RaveID, refreshToken: String) {
        let sessionID = RaveID.random()
        let token = try OpaqueToken.generate()
        _ = try await database.execute(
            Self.openSession, [sessionID, operatorID, expiresAt, OpaqueToken.hash(token), now])
        return (sessionID, token)
    }

    /// The session a refresh token belongs to, locked; nil for an unknown token.
    func refreshLookup(_ token: String) async throws -> OperatorRefreshLookup? {
        guard let row = try await database.execute(Self.selectRefresh, [OpaqueToken.hash(token)]).first else {
            return nil
        }
        return OperatorRefreshLookup(
            sessionID: try row.decode(column: "id"), operatorID: try row.decode(column: "operator_id"),
            tokenGeneration: try row.decode(column: "token_generation"),
            sessionGeneration: try row.decode(column: "session_generation"), revoked: try row.decode(column: "revoked"),
            expiresAt: try row.decode(column: "expires_at"), lastUsedAt: try row.decode(column: "last_used_at"))
    }

    /// Moves the session to its next generation; returns the new refresh token.
    func rotate(_ sessionID: RaveID, now: Date) async throws -> String {
        let token = try OpaqueToken.generate()
        _ = try await database.execute(Self.rotate, [sessionID, now, OpaqueToken.hash(token)])
        return token
    }

    /// Ends one session (published on the revocation feed); false when it had ended already.
    @discardableResult
    func revoke(sessionID: RaveID, reason: String) async throws -> Bool {
        try await database.execute(Self.revokeSession, [sessionID, reason]).first?.decode(Int64.self, column: "ended")
            == 1
    }

    /// Ends every live session of an operator (published on the revocation feed); returns how many.
    func revokeAll(operatorID: RaveID, reason: String) async throws -> Int {
        let rows = try await database.execute(Self.revokeAll, [operatorID, reason])
        return Int(try rows.first?.decode(Int64.self, column: "ended") ?? 0)
    }

    /// The operator and whether `sessionID` is a live session of theirs; nil when there is no such operator.
    func operatorOfSession(_ id: RaveID, sessionID: RaveID) async throws -> (record: OperatorRecord, live: Bool)? {
        guard let row = try await database.execute(Self.selectSessionOperator, [id, sessionID]).first else {
            return nil
        }
        return (try Self.record(row), try row.decode(column: "live"))
    }

    static func record(_ row: PostgresRow) throws -> OperatorRecord {
        let roleName = try row.decode(String.self, column: "role")
        guard let role = OperatorRole(name: roleName) else {
            throw IdentityError.internalError("an operator's stored role \(Validation.quoted(roleName)) is unknown")
        }
        return OperatorRecord(
            id: try row.decode(column: "id"), email: try row.decode(column: "email"),
            grant: OperatorToken.Grant(
                role: role, publisherID: try row.decode(RaveID?.self, column: "publisher_id")?.hex),
            passwordHash: try row.decode(column: "password_hash"), enrolled: try row.decode(column: "enrolled"),
            disabled: try row.decode(column: "disabled"), createdAt: try row.decode(column: "created_at"))
    }
}
