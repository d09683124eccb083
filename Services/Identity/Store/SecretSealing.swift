import Foundation
import RaveCrypto
import RavePostgres

/// Identity's secrets at rest: what binds each sealed secret to its row, the start-up step that seals the rows
/// written in plaintext before migration 0004, and the re-sealing a key rotation ends with.
///
/// A sealed value opens only with the context it was sealed for, so a signing key copied into another key's row,
/// or one user's TOTP secret copied into another user's, fails to open instead of lending its secret.
enum SecretSealing {
    /// The associated data of a signing key's seed: its key id.
    static func signingKeyContext(_ keyID: String) -> [UInt8] { Array("rave.identity.signing_keys:\(keyID)".utf8) }

    /// The associated data of a TOTP secret: its user's id.
    static func totpContext(_ userID: RaveID) -> [UInt8] { Array("rave.identity.two_factor:\(userID.hex)".utf8) }

    /// The associated data of an operator's TOTP secret: the operator's id.
    static func operatorTOTPContext(_ operatorID: RaveID) -> [UInt8] {
        Array("rave.identity.operators:\(operatorID.hex)".utf8)
    }

    /// What a pass sealed or re-sealed.
    struct Report: Sendable, Hashable {
        var signingKeys = 0
        var totpSecrets = 0
        /// Operators' TOTP secrets (re-sealing only: operators never had plaintext secrets).
        var operatorSecrets = 0
        /// Mails waiting in the outbox (re-sealing only).
        var pendingMails = 0
        /// Rows whose sealed value none of the ring's keys opens (re-sealing only).
        var unreadable = 0
    }

    /// Rows per round trip in both passes.
    static let batchSize = 500

    // MARK: - Rows written before sealing (migration 0004)

    static let constraintsValidated = PostgresStatement(
        name: "identity_sealed_secret_constraints_validated",
        sql: """
            SELECT count(*) FILTER (WHERE convalidated) = 2 AS validated FROM pg_constraint
            WHERE (conrelid, conname) IN (('signing_keys'::regclass, 'signing_keys_private_key_sealed'),
                ('two_factor'::regclass, 'two_factor_secret_sealed'))
            """)
    static let plaintextSigningKeys = PostgresStatement(
        name: "identity_plaintext_signing_keys",
        sql: """
            SELECT kid, private_key FROM signing_keys WHERE private_key IS NOT NULL ORDER BY kid LIMIT \(batchSize)
            FOR UPDATE
            """)
    /// A key that was ever stored in plaintext may have been read: it signs nothing more (it stays published for a
    /// day, so the tokens it signed keep working until they expire) and start-up creates a sealed successor.
    static let sealSigningKey = PostgresStatement(
        name: "identity_seal_plaintext_signing_key",
        sql: """
            UPDATE signing_keys SET private_key = NULL, private_key_sealed = $2, retired_at = coalesce(retired_at, now())
            WHERE kid = $1
            """)
    static let plaintextSecrets = PostgresStatement(
        name: "identity_plaintext_totp_secrets",
        sql: """
            SELECT user_id, secret FROM two_factor WHERE secret IS NOT NULL ORDER BY user_id LIMIT \(batchSize)
            FOR UPDATE
            """)
    static let sealSecret = PostgresStatement(
        name: "identity_seal_plaintext_totp_secret",
        sql: "UPDATE two_factor SET secret = NULL, secret_sealed = $2 WHERE user_id = $1")

    /// Seals every row still holding a plaintext secret in one transaction; nil when there is nothing to seal.
    ///
    /// The same transaction retires the signing keys among them and validates the constraints of migration 0004;
    /// once they are validated, a start-up costs one query here.
    ///
    /// Replicas starting together are safe: the row locks make the second wait and then find nothing to seal.
    static func sealPlaintextRows(pool: PostgresPool, secrets: SecretKeyRing) async throws -> Report? {
        if try await pool.execute(constraintsValidated, []).first?.decode(Bool.self, column: "validated") == true {
            return nil
        }
        return try await pool.transaction { transaction in
            var report = Report()
            while true {
                var updates: [[(any PostgresEncodable)?]] = []
                for row in try await transaction.execute(plaintextSigningKeys, []) {
                    let keyID = try row.decode(String.self, column: "kid")
                    let key: Ed25519PrivateKey
                    do {
                        key = try Ed25519PrivateKey(pem: try row.decode(String.self, column: "private_key"))
                    } catch let error as CryptoError {
                        throw CryptoError.configuration("signing key \(keyID) is not a valid PEM key: \(error.message)")
                    }
                    updates.append([
                        keyID, try secrets.seal(key.rawRepresentation(), context: signingKeyContext(keyID)),
                    ])
                }
                if updates.isEmpty { break }
                _ = try await transaction.pipeline(sealSigningKey, parameterRows: updates)
                report.signingKeys += updates.count
            }
            while true {
                var updates: [[(any PostgresEncodable)?]] = []
                for row in try await transaction.execute(plaintextSecrets, []) {
                    let userID = try row.decode(RaveID.self, column: "user_id")
                    let secret = try row.decode([UInt8].self, column: "secret")
                    updates.append([userID, try secrets.seal(secret, context: totpContext(userID))])
                }
                if updates.isEmpty { break }
                _ = try await transaction.pipeline(sealSecret, parameterRows: updates)
                report.totpSecrets += updates.count
            }
            try await transaction.query("ALTER TABLE signing_keys VALIDATE CONSTRAINT signing_keys_private_key_sealed")
            try await transaction.query("ALTER TABLE two_factor VALIDATE CONSTRAINT two_factor_secret_sealed")
            return report
        }
    }

    // MARK: - Re-sealing after a key rotation

    static let signingKeysPage = PostgresStatement(
        name: "identity_sealed_signing_keys_page",
        sql: """
            SELECT kid, private_key_sealed FROM signing_keys WHERE kid > $1 ORDER BY kid LIMIT \(batchSize)
            """)
    static let resealSigningKey = PostgresStatement(
        name: "identity_reseal_signing_key",
        sql: "UPDATE signing_keys SET private_key_sealed = $3 WHERE kid = $1 AND private_key_sealed = $2")
    static let secretsPage = PostgresStatement(
        name: "identity_sealed_totp_secrets_page",
        sql: """
            SELECT user_id, secret_sealed FROM two_factor WHERE user_id > $1 ORDER BY user_id LIMIT \(batchSize)
            """)
    static let resealSecret = PostgresStatement(
        name: "identity_reseal_totp_secret",
        sql: "UPDATE two_factor SET secret_sealed = $3 WHERE user_id = $1 AND secret_sealed = $2")
    static let operatorSecretsPage = PostgresStatement(
        name: "identity_sealed_operator_secrets_page",
        sql: """
            SELECT id, totp_secret_sealed FROM operators WHERE id > $1 AND totp_secret_sealed IS NOT NULL
            ORDER BY id LIMIT \(batchSize)
            """)
    static let resealOperatorSecret = PostgresStatement(
        name: "identity_reseal_operator_secret",
        sql: "UPDATE operators SET totp_secret_sealed = $3 WHERE id = $1 AND totp_secret_sealed = $2")
    static let pendingMailsPage = PostgresStatement(
        name: "identity_sealed_pending_mails_page",
        sql: """
            SELECT id, key, payload FROM outbox_events
            WHERE id > $1 AND topic = '\(IdentityMail.topic)' AND delivered_at IS NULL ORDER BY id LIMIT \(batchSize)
            """)
    static let resealPendingMail = PostgresStatement(
        name: "identity_reseal_pending_mail",
        sql: "UPDATE outbox_events SET payload = $3 WHERE id = $1 AND payload = $2 AND delivered_at IS NULL")

    /// Re-seals under the ring's first key every secret another key sealed, a page at a time.
    ///
    /// Each update applies only if the row still holds the value read (a secret replaced meanwhile was sealed with
    /// the first key already), so this runs safely beside serving replicas. Rows no key of the ring opens are
    /// counted in `unreadable` and left as they are.
    static func resealUnderPrimaryKey(pool: PostgresPool, secrets: SecretKeyRing) async throws -> Report {
        var report = Report()
        let first = RaveID(high: 0, low: 0)
        report.signingKeys = try await resealPages(
            pool: pool, secrets: secrets, report: &report, after: "", page: signingKeysPage,
            reseal: resealSigningKey, idColumn: "kid", sealedColumn: "private_key_sealed"
        ) { key, _ in signingKeyContext(key) }
        report.totpSecrets = try await resealPages(
            pool: pool, secrets: secrets, report: &report, after: first, page: secretsPage,
            reseal: resealSecret, idColumn: "user_id", sealedColumn: "secret_sealed"
        ) { userID, _ in totpContext(userID) }
        report.operatorSecrets = try await resealPages(
            pool: pool, secrets: secrets, report: &report, after: first, page: operatorSecretsPage,
            reseal: resealOperatorSecret, idColumn: "id", sealedColumn: "totp_secret_sealed"
        ) { operatorID, _ in operatorTOTPContext(operatorID) }
        // A mail still waiting when the old key leaves the ring would be dropped unsent.
        report.pendingMails = try await resealPages(
            pool: pool, secrets: secrets, report: &report, after: Int64(0), page: pendingMailsPage,
            reseal: resealPendingMail, idColumn: "id", sealedColumn: "payload"
        ) { _, row in IdentityMail.context(key: try row.decode(String.self, column: "key")) }
        return report
    }

    /// Walks a table by key from `after`, re-sealing each page's values that need it; returns the rows updated.
    ///
    /// `context` gives a row's associated data from its key and the row.
    private static func resealPages<Key: PostgresEncodable & PostgresDecodable>(
        pool: PostgresPool, secrets: SecretKeyRing, report: inout Report, after start: Key, page: PostgresStatement,
        reseal: PostgresStatement, idColumn: String, sealedColumn: String,
        context: (Key, PostgresRow) throws -> [UInt8]
    ) async throws -> Int {
        var updated = 0
        var last = start
        while true {
            let rows = try await pool.execute(page, [last])
            guard let final = rows.last else { return updated }
            last = try final.decode(Key.self, column: idColumn)
            var updates: [[(any PostgresEncodable)?]] = []
            for row in rows {
                let key = try row.decode(Key.self, column: idColumn)
                let sealed = try row.decode([UInt8].self, column: sealedColumn)
                if let resealed = resealed(sealed, context: try context(key, row), secrets: secrets, report: &report) {
                    updates.append([key, sealed, resealed])
                }
            }
            if !updates.isEmpty {
                let results = try await pool.transaction { try await $0.pipeline(reseal, parameterRows: updates) }
                updated += results.reduce(0) { $0 + $1.affectedRowCount }
            }
        }
    }

    /// `sealed` re-sealed under the first key; nil when it already is, or when no key opens it (counted).
    private static func resealed(
        _ sealed: [UInt8], context: [UInt8], secrets: SecretKeyRing, report: inout Report
    ) -> [UInt8]? {
        guard SecretKeyRing.keyID(ofSealed: sealed) != secrets.primaryKeyID else { return nil }
        do {
            return try secrets.seal(secrets.open(sealed, context: context), context: context)
        } catch {
            report.unreadable += 1
            return nil
        }
    }
}
