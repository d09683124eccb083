import Foundation
import RaveCrypto
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Identity

/// Secrets at rest: signing keys and TOTP secrets are stored sealed, so reading identity's database yields neither
/// a key that signs tokens the gateway accepts nor a working TOTP secret.
@Suite("Secrets at rest")
struct SecretsAtRestTests {
    typealias Harness = IdentityHarness

    @Test func storedSigningKeysAndTOTPSecretsAreNotPlaintext() async throws {
        try await Harness.with { harness in
            let (userID, secret) = try await enrolTwoFactor(harness)

            let totpRow = try #require(
                try await harness.pool.query(
                    "SELECT secret, secret_sealed FROM two_factor WHERE user_id = $1", [userID]
                ).first)
            #expect(try totpRow.decode([UInt8]?.self, column: "secret") == nil)
            let sealedSecret = try totpRow.decode([UInt8].self, column: "secret_sealed")
            #expect(!sealedSecret.contains(window: secret))
            #expect(
                try harness.dependencies.secretKeys.open(sealedSecret, context: SecretSealing.totpContext(userID))
                    == secret)

            let keyRow = try #require(
                try await harness.pool.query(
                    "SELECT kid, private_key, private_key_sealed FROM signing_keys WHERE kid = $1",
                    [harness.dependencies.signer.keyID]
                ).first)
            #expect(try keyRow.decode(String?.self, column: "private_key") == nil)
            let sealedKey = try keyRow.decode([UInt8].self, column: "private_key_sealed")
            let seed = try harness.dependencies.secretKeys.open(
                sealedKey, context: SecretSealing.signingKeyContext(harness.dependencies.signer.keyID))
            #expect(!sealedKey.contains(window: seed))
            #expect(try Ed25519PrivateKey(rawRepresentation: seed).publicKey().rawRepresentation.count == 32)

            // A key file with the same key id but other key bytes opens nothing.
            let wrongKeys = try SecretKeyRing(
                entries: [.init(id: harness.dependencies.secretKeys.primaryKeyID, key: SymmetricKey())])
            let wrongTOTP = #expect(throws: CryptoError.self) {
                try wrongKeys.open(sealedSecret, context: SecretSealing.totpContext(userID))
            }
            #expect(wrongTOTP?.reason == .sealedDataRejected)
            #expect(throws: CryptoError.self) {
                try wrongKeys.open(
                    sealedKey, context: SecretSealing.signingKeyContext(harness.dependencies.signer.keyID))
            }
        }
    }

    /// The finding: anyone who can read the database must not be able to mint tokens the gateway accepts or
    /// produce a user's TOTP codes.
    @Test func readingTheDatabaseGivesNoUsableSigningKeyOrTOTPSecret() async throws {
        try await Harness.with { harness in
            let (userID, secret) = try await enrolTwoFactor(harness)
            let published = try await publishedKeys(harness)
            #expect(try await DatabaseReader(pool: harness.pool).tokenForgeries(accepting: published).isEmpty)
            #expect(try await DatabaseReader(pool: harness.pool).totpSecrets(matching: secret).isEmpty)
            // The service itself still signs and checks codes.
            let token = try harness.dependencies.signer.issue(
                subject: userID.hex, applicationID: RaveID.random().hex, sessionID: RaveID.random().hex,
                scopes: ["player"])
            #expect(try AccessTokenVerifier(keys: published).verify(token.token).subject == userID.hex)
        }
    }

    @Test func aSealedSecretMovedToAnotherRowDoesNotOpen() async throws {
        try await Harness.with { harness in
            let (first, _) = try await enrolTwoFactor(harness, email: "first@example.com")
            let (second, _) = try await enrolTwoFactor(harness, email: "second@example.com")
            try await harness.pool.query(
                """
                UPDATE two_factor SET secret_sealed = (SELECT secret_sealed FROM two_factor WHERE user_id = $1)
                WHERE user_id = $2
                """, [first, second])
            let store = TwoFactorStore(database: harness.pool, secrets: harness.dependencies.secretKeys)
            #expect(try await store.state(userID: first) != nil)
            let error = await #expect(throws: IdentityError.self) { try await store.state(userID: second) }
            #expect(error?.code == .internal)
            #expect(error?.message.contains("cannot be unsealed") == true)
        }
    }

    /// Rows an earlier release wrote in plaintext are sealed at start-up, in one transaction that also validates
    /// the constraints of migration 0004; the signing keys among them are retired (they may have been read).
    @Test func startUpSealsPlaintextRowsOfEarlierReleasesAndNoPlaintextRemains() async throws {
        try await Harness.withDatabase { url in
            let pool = try PostgresPool(
                configuration: ScratchDatabase.poolConfiguration(url: url, size: 4), group: Harness.group)
            defer { pool.shutdown() }
            let all = try Migrator(pool: pool, directory: Harness.migrationsDirectory)
            try await Migrator(pool: pool, migrations: all.migrations.filter { $0.version <= 3 }).migrate()

            // What the release before sealing stored.
            let oldKey = try Ed25519PrivateKey()
            let oldKeyID = "plaintext-key"
            try await pool.query(
                "INSERT INTO signing_keys (kid, private_key, public_key) VALUES ($1, $2, $3)",
                [oldKeyID, try oldKey.pemRepresentation(), try oldKey.publicKey().rawRepresentation])
            let userID = RaveID.random()
            let secret = try SecureRandom.bytes(count: TOTP.secretLength)
            try await pool.query("INSERT INTO users (id) VALUES ($1)", [userID])
            try await pool.query(
                "INSERT INTO two_factor (user_id, secret, confirmed_at) VALUES ($1, $2, now())", [userID, secret])
            let oldKeys = SigningKeySet(keys: [.init(keyID: oldKeyID, publicKey: try oldKey.publicKey())])
            // The reader finds both while they are plaintext: what the test below proves absent is detectable.
            #expect(try await DatabaseReader(pool: pool).tokenForgeries(accepting: oldKeys).count == 1)
            #expect(try await DatabaseReader(pool: pool).totpSecrets(matching: secret).count == 1)

            try await all.migrate()
            let secretKeys = try SecretKeyFile.ring()
            let service = try await IdentityDependencies.start(
                pool: pool, configuration: IdentityConfiguration(secretKeys: secretKeys))

            #expect(try await DatabaseReader(pool: pool).tokenForgeries(accepting: oldKeys).isEmpty)
            #expect(try await DatabaseReader(pool: pool).totpSecrets(matching: secret).isEmpty)
            let validated = try await pool.query(
                """
                SELECT conname FROM pg_constraint
                WHERE conname IN ('signing_keys_private_key_sealed', 'two_factor_secret_sealed') AND convalidated
                """)
            #expect(validated.count == 2)
            let state = try await TwoFactorStore(database: pool, secrets: secretKeys).state(userID: userID)
            #expect(state?.secret == secret)
            #expect(state?.confirmed == true)

            // The old key signs no more but stays published for the tokens it signed; a sealed key replaces it.
            #expect(service.signer.keyID != oldKeyID)
            let retired = try await pool.query(
                "SELECT retired_at IS NOT NULL AS retired FROM signing_keys WHERE kid = $1", [oldKeyID])
            #expect(try retired.first?.decode(Bool.self, column: "retired") == true)
            let published = try await SigningKeyStore(database: pool).publishedKeys().map(\.kid)
            #expect(Set(published) == [oldKeyID, service.signer.keyID])

            // Plaintext can no longer be written, and a second start-up has nothing to seal.
            let plaintextWrite = await #expect(throws: PostgresError.self) {
                try await pool.query(
                    "UPDATE two_factor SET secret = $2 WHERE user_id = $1", [userID, secret])
            }
            #expect(plaintextWrite?.sqlState == "23514")
            #expect(try await SecretSealing.sealPlaintextRows(pool: pool, secrets: secretKeys) == nil)
        }
    }

    /// Rotation: a new first key in the file, then `identity reseal-secrets`; afterwards the old key can go.
    @Test func resealingPutsEverySecretUnderTheNewFirstKey() async throws {
        try await Harness.with { harness in
            let (userID, secret) = try await enrolTwoFactor(harness)
            let old = harness.dependencies.secretKeys
            let new = try SecretKeyRing(entries: [.init(id: "rotated", key: SymmetricKey())] + old.entries)
            let report = try await SecretSealing.resealUnderPrimaryKey(pool: harness.pool, secrets: new)
            // Enrolling sent a verification mail, still waiting in the outbox (nothing delivers it here).
            #expect(report == SecretSealing.Report(signingKeys: 1, totpSecrets: 1, pendingMails: 1, unreadable: 0))
            #expect(
                try await SecretSealing.resealUnderPrimaryKey(pool: harness.pool, secrets: new)
                    == SecretSealing.Report())

            let onlyNew = try SecretKeyRing(entries: [new.entries[0]])
            #expect(
                try await TwoFactorStore(database: harness.pool, secrets: onlyNew).state(userID: userID)?.secret
                    == secret)
            let signer = try await SigningKeyStore(database: harness.pool).activeSigner(secrets: onlyNew)
            #expect(signer.keyID == harness.dependencies.signer.keyID)

            // Without the key a secret was sealed with, re-sealing reports it instead of guessing.
            let stranger = try SecretKeyRing(entries: [.init(id: "stranger", key: SymmetricKey())])
            let stuck = try await SecretSealing.resealUnderPrimaryKey(pool: harness.pool, secrets: stranger)
            #expect(stuck == SecretSealing.Report(signingKeys: 0, totpSecrets: 0, unreadable: 3))
        }
    }

    /// Operators' TOTP secrets and mails still waiting in the outbox are sealed too: a rotation that left them under
    /// the old key would lock every operator out, and drop the mails, once the old key leaves the file.
    @Test func resealingCoversOperatorsTOTPSecretsAndWaitingMails() async throws {
        try await Harness.with { harness in
            let operatorAccount = try await OperatorTests.enrol(
                harness, email: "ops@example.com", role: .owner, allPublishers: true)
            let operatorID = try #require(RaveID(operatorAccount.account.operatorId))
            let mail = IdentityMail.Outgoing(
                kind: .verifyEmail, to: "ana@example.com", fromName: "Rave", subject: "Your code", body: "123456")
            let old = harness.dependencies.secretKeys
            try await harness.pool.transaction { transaction in
                try await IdentityMail.enqueue(mail, userID: operatorID, secrets: old, in: transaction)
            }
            let new = try SecretKeyRing(entries: [.init(id: "rotated", key: SymmetricKey())] + old.entries)
            let report = try await SecretSealing.resealUnderPrimaryKey(pool: harness.pool, secrets: new)
            #expect(report.operatorSecrets == 1 && report.pendingMails == 1 && report.unreadable == 0, "\(report)")

            let onlyNew = try SecretKeyRing(entries: [new.entries[0]])
            let totp = try await OperatorStore(database: harness.pool).totp(operatorID, secrets: onlyNew)
            #expect(totp?.secret == operatorAccount.totp.secret, "the operator's authenticator still works")
            let waiting = try await harness.pool.query(
                "SELECT key, payload FROM outbox_events WHERE topic = 'identity.mail' AND delivered_at IS NULL")
            let row = try #require(waiting.first)
            let opened = try onlyNew.open(
                try row.decode([UInt8].self, column: "payload"),
                context: IdentityMail.context(key: try row.decode(String.self, column: "key")))
            #expect(try JSONDecoder().decode(IdentityMail.Outgoing.self, from: Data(opened)) == mail)
        }
    }

    @Test func resealCommandExitsZeroWhenEverySecretIsUnderTheFirstKey() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-reseal-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keyFile = try SecretKeyFile.write(in: directory)
        try await Harness.withDatabase { url in
            let environment = ["RAVE_DATABASE_URL": url, "RAVE_SECRET_KEY_FILE": keyFile]
            #expect(await SecretResealCommand.run(environment: environment) == 0)
            #expect(await SecretResealCommand.run(environment: ["RAVE_DATABASE_URL": url]) == 78)
        }
    }

    // MARK: - Helpers

    /// A password account with confirmed two-factor (as the two-factor tests make it); its user id and TOTP secret.
    func enrolTwoFactor(
        _ harness: Harness, email: String = "sealed@example.com"
    ) async throws -> (userID: RaveID, secret: [UInt8]) {
        let account = try await TwoFactorTests().enrolledAccount(harness, email: email)
        return (try #require(RaveID(account.context.caller?.userID ?? "")), account.totp.secret)
    }

    func publishedKeys(_ harness: Harness) async throws -> SigningKeySet {
        let response = try await harness.internalHandlers.signingKeys(.init(), context: Harness.serviceContext)
        return SigningKeySet(
            keys: try response.keys.map {
                .init(keyID: $0.kid, publicKey: try Ed25519PublicKey(rawRepresentation: $0.publicKey))
            })
    }
}

/// Someone with read access to identity's database and nothing else, trying what such a reader would.
struct DatabaseReader {
    let pool: PostgresPool

    /// Every value of every column of `table`, as bytes (bytea decoded, text as UTF-8).
    func values(of table: String) async throws -> [[UInt8]] {
        var values: [[UInt8]] = []
        for row in try await pool.query("SELECT to_jsonb(t)::text AS row FROM \(table) t") {
            let json = try row.decode(String.self, column: "row")
            let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] ?? [:]
            for case let text as String in object.values {
                values.append(text.hasPrefix("\\x") ? Hex.decode(text.dropFirst(2)) ?? [] : Array(text.utf8))
            }
        }
        return values
    }

    /// Keys found in `signing_keys` (as PEM, or as a raw Ed25519 seed at any offset of any value) that sign a token
    /// `published` accepts.
    func tokenForgeries(accepting published: SigningKeySet) async throws -> [String] {
        var forgeries: [String] = []
        let verifier = AccessTokenVerifier(keys: published)
        for value in try await values(of: "signing_keys") {
            var candidates: [Ed25519PrivateKey] = []
            if let pem = try? Ed25519PrivateKey(pem: String(decoding: value, as: UTF8.self)) { candidates.append(pem) }
            for offset in 0...max(0, value.count - 32) where value.count >= 32 {
                if let key = try? Ed25519PrivateKey(rawRepresentation: Array(value[offset..<(offset + 32)])) {
                    candidates.append(key)
                }
            }
            for key in candidates {
                for entry in published.keys {
                    let forged = try AccessTokenSigner(keyID: entry.keyID, privateKey: key).issue(
                        subject: RaveID.random().hex, applicationID: RaveID.random().hex,
                        sessionID: RaveID.random().hex, scopes: ["player", "authenticated"])
                    if (try? verifier.verify(forged.token)) != nil { forgeries.append(entry.keyID) }
                }
            }
        }
        return forgeries
    }

    /// Values in `two_factor` (whole, or a window of the secret's length at any offset) that produce the same codes
    /// as `secret`.
    func totpSecrets(matching secret: [UInt8]) async throws -> [[UInt8]] {
        let now = Date()
        let expected = try TOTP(secret: secret).code(at: now)
        let next = try TOTP(secret: secret).code(at: now.addingTimeInterval(30))
        var matches: [[UInt8]] = []
        for value in try await values(of: "two_factor") where value.count >= secret.count {
            for offset in 0...(value.count - secret.count) {
                let candidate = TOTP(secret: Array(value[offset..<(offset + secret.count)]))
                if try candidate.code(at: now) == expected, try candidate.code(at: now.addingTimeInterval(30)) == next {
                    matches.append(candidate.secret)
                }
            }
        }
        return matches
    }
}

extension Array where Element == UInt8 {
    /// True when `needle` occurs as a contiguous run.
    func contains(window needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, count >= needle.count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
