import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// A user's TOTP enrolment as stored.
struct TwoFactorState: Sendable {
    var secret: [UInt8]
    var confirmed: Bool
    /// The last accepted time step; a code of this step or earlier is a replay.
    var lastStep: Int64
}

/// A pending second-factor step of a login.
struct TwoFactorChallengeRecord: Sendable {
    var userID: RaveID
    var appID: RaveID
    var deviceID: String
    /// The signed-in guest to merge into the account once the challenge is passed.
    var mergeSource: RaveID?
    var isOpen: Bool
}

/// TOTP secrets, backup codes and login challenges.
///
/// TOTP secrets are stored sealed (`SecretSealing`): under the secret key ring, bound to the user's id.
struct TwoFactorStore: Sendable {
    let database: any PostgresQueryable
    let secrets: SecretKeyRing

    static let selectState = PostgresStatement(
        name: "identity_select_two_factor_sealed",
        sql: """
            SELECT secret_sealed, confirmed_at IS NOT NULL AS confirmed, last_step FROM two_factor
            WHERE user_id = $1 FOR UPDATE
            """)
    /// A new secret replaces an unconfirmed one; a confirmed enrolment is left alone (0 rows).
    static let begin = PostgresStatement(
        name: "identity_begin_two_factor_sealed",
        sql: """
            INSERT INTO two_factor AS t (user_id, secret_sealed) VALUES ($1, $2)
            ON CONFLICT (user_id) DO UPDATE SET secret_sealed = EXCLUDED.secret_sealed, last_step = 0
            WHERE t.confirmed_at IS NULL
            """)
    static let confirm = PostgresStatement(
        name: "identity_confirm_two_factor",
        sql: "UPDATE two_factor SET confirmed_at = now() WHERE user_id = $1 AND confirmed_at IS NULL")
    static let acceptStep = PostgresStatement(
        name: "identity_accept_totp_step",
        sql: "UPDATE two_factor SET last_step = $2 WHERE user_id = $1 AND last_step < $2")
    static let deleteBackupCodes = PostgresStatement(
        name: "identity_delete_backup_codes", sql: "DELETE FROM two_factor_backup_codes WHERE user_id = $1")
    static let insertBackupCode = PostgresStatement(
        name: "identity_insert_backup_code",
        sql: "INSERT INTO two_factor_backup_codes (user_id, code_hash) VALUES ($1, $2)")
    static let selectBackupCodes = PostgresStatement(
        name: "identity_select_backup_codes",
        sql: "SELECT code_hash FROM two_factor_backup_codes WHERE user_id = $1 AND used_at IS NULL")
    static let useBackupCode = PostgresStatement(
        name: "identity_use_backup_code",
        sql: """
            UPDATE two_factor_backup_codes SET used_at = now()
            WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL
            """)
    static let disable = PostgresStatement(
        name: "identity_disable_two_factor", sql: "DELETE FROM two_factor WHERE user_id = $1")
    static let insertChallenge = PostgresStatement(
        name: "identity_insert_challenge",
        sql: """
            INSERT INTO two_factor_challenges (id, user_id, app_id, device_id, expires_at, merge_source_user_id)
            VALUES ($1, $2, $3, $4, $5, $6)
            """)
    static let selectChallenge = PostgresStatement(
        name: "identity_select_challenge",
        sql: """
            SELECT user_id, app_id, device_id, merge_source_user_id,
                used_at IS NULL AND expires_at > now() AS open
            FROM two_factor_challenges WHERE id = $1 FOR UPDATE
            """)
    static let useChallenge = PostgresStatement(
        name: "identity_use_challenge", sql: "UPDATE two_factor_challenges SET used_at = now() WHERE id = $1")

    /// The user's enrolment, locked for the rest of the transaction; nil when there is none.
    func state(userID: RaveID) async throws -> TwoFactorState? {
        guard let row = try await database.execute(Self.selectState, [userID]).first else { return nil }
        let sealed = try row.decode([UInt8].self, column: "secret_sealed")
        let secret: [UInt8]
        do {
            secret = try secrets.open(sealed, context: SecretSealing.totpContext(userID))
        } catch {
            throw IdentityError.internalError(
                "the two-factor secret of user \(userID.hex) cannot be unsealed with RAVE_SECRET_KEY_FILE: "
                    + error.message)
        }
        return TwoFactorState(
            secret: secret, confirmed: try row.decode(column: "confirmed"),
            lastStep: try row.decode(column: "last_step"))
    }

    /// Stores a new unconfirmed secret (sealed); false when two-factor is already confirmed.
    func begin(userID: RaveID, secret: [UInt8]) async throws -> Bool {
        let sealed = try secrets.seal(secret, context: SecretSealing.totpContext(userID))
        return try await database.execute(Self.begin, [userID, sealed]).affectedRowCount == 1
    }

    func confirm(userID: RaveID) async throws {
        _ = try await database.execute(Self.confirm, [userID])
    }

    /// Records `step` as used; false when it (or a later one) was used already, so each code works once.
    func acceptStep(userID: RaveID, step: Int64) async throws -> Bool {
        try await database.execute(Self.acceptStep, [userID, step]).affectedRowCount == 1
    }

    func replaceBackupCodes(userID: RaveID, hashes: [[UInt8]]) async throws {
        _ = try await database.execute(Self.deleteBackupCodes, [userID])
        for hash in hashes {
            _ = try await database.execute(Self.insertBackupCode, [userID, hash])
        }
    }

    func unusedBackupCodes(userID: RaveID) async throws -> [[UInt8]] {
        try await database.execute(Self.selectBackupCodes, [userID]).map { try $0.decode(column: "code_hash") }
    }

    /// Spends a backup code; false when it was spent already.
    func useBackupCode(userID: RaveID, hash: [UInt8]) async throws -> Bool {
        try await database.execute(Self.useBackupCode, [userID, hash]).affectedRowCount == 1
    }

    func disable(userID: RaveID) async throws {
        _ = try await database.execute(Self.disable, [userID])
    }

    func createChallenge(
        userID: RaveID, appID: RaveID, deviceID: String, mergeSource: RaveID?, expiresAt: Date
    ) async throws -> RaveID {
        let id = RaveID.random()
        _ = try await database.execute(Self.insertChallenge, [id, userID, appID, deviceID, expiresAt, mergeSource])
        return id
    }

    /// The challenge, locked so two completions of it cannot both succeed.
    func challenge(_ id: RaveID) async throws -> TwoFactorChallengeRecord? {
        guard let row = try await database.execute(Self.selectChallenge, [id]).first else { return nil }
        return TwoFactorChallengeRecord(
            userID: try row.decode(column: "user_id"), appID: try row.decode(column: "app_id"),
            deviceID: try row.decode(column: "device_id"), mergeSource: try row.decode(column: "merge_source_user_id"),
            isOpen: try row.decode(column: "open"))
    }

    func useChallenge(_ id: RaveID) async throws {
        _ = try await database.execute(Self.useChallenge, [id])
    }
}
