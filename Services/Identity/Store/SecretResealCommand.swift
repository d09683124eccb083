import Foundation
import RaveCrypto
import RavePostgres
import RaveRuntime
import RaveTransport

/// `identity reseal-secrets`: the last step of a secret-key rotation (docs/OPERATIONS.md).
///
/// Reads the database and key file as the service does (`RAVE_DATABASE_URL`, `RAVE_SECRET_KEY_FILE`), applies
/// pending migrations and seals anything still in plaintext, then re-seals under the file's first key every signing
/// key, player and operator TOTP secret and mail waiting in the outbox that another key sealed. Safe beside running replicas. Exits 0 when every secret is now under the
/// first key, 1 when some could not be opened with any key of the file (the old key was removed too early), 78 for a
/// configuration error.
enum SecretResealCommand {
    static func run(environment: [String: String]) async -> Int32 {
        let databaseURL: String
        let secretKeys: SecretKeyRing
        do {
            let configuration = try ServiceConfiguration(serviceName: "identity", environment: environment)
            guard let url = configuration.databaseURL else {
                throw RuntimeError(.invalidConfiguration, "RAVE_DATABASE_URL must name identity's database")
            }
            databaseURL = url
            secretKeys = try IdentityConfiguration.secretKeys(environment: environment)
        } catch let error as RuntimeError {
            print("identity reseal-secrets: \(error.message)")
            return RaveServiceMain.configurationErrorStatus
        } catch {
            print("identity reseal-secrets: \(error)")
            return RaveServiceMain.configurationErrorStatus
        }
        do {
            let group = try EventLoopGroup(loopCount: 1)
            defer { group.shutdown() }
            var configuration = PostgresPool.Configuration(connectionString: databaseURL)
            configuration.size = 2
            let pool = try PostgresPool(configuration: configuration, group: group)
            defer { pool.shutdown() }
            _ = try await Migrator(pool: pool, directory: IdentityMain.migrationsDirectory).migrate()
            if let sealed = try await SecretSealing.sealPlaintextRows(pool: pool, secrets: secretKeys) {
                print(
                    "identity reseal-secrets: sealed \(sealed.signingKeys) plaintext signing keys (now retired) and "
                        + "\(sealed.totpSecrets) plaintext TOTP secrets")
            }
            let report = try await SecretSealing.resealUnderPrimaryKey(pool: pool, secrets: secretKeys)
            print(
                "identity reseal-secrets: re-sealed \(report.signingKeys) signing keys, \(report.totpSecrets) TOTP "
                    + "secrets, \(report.operatorSecrets) operators' TOTP secrets and \(report.pendingMails) waiting "
                    + "mails under key \(secretKeys.primaryKeyID)")
            guard report.unreadable == 0 else {
                print(
                    "identity reseal-secrets: \(report.unreadable) secrets open with no key of RAVE_SECRET_KEY_FILE; "
                        + "put back the key they were sealed with and run again")
                return 1
            }
            return 0
        } catch {
            print("identity reseal-secrets failed: \(error)")
            return 1
        }
    }
}
