import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// The Ed25519 keys that sign access tokens, kept in the database so every replica signs and serves the same set.
///
/// Private keys are stored sealed (`SecretSealing`): the 32-byte seed under the secret key ring, bound to the key id.
struct SigningKeyStore: Sendable {
    let database: any PostgresQueryable

    static let selectActive = PostgresStatement(
        name: "identity_select_active_signing_key_sealed",
        sql: """
            SELECT kid, private_key_sealed FROM signing_keys WHERE retired_at IS NULL
            ORDER BY created_at DESC, kid LIMIT 1
            """)
    static let insert = PostgresStatement(
        name: "identity_insert_signing_key_sealed",
        sql: "INSERT INTO signing_keys (kid, private_key_sealed, public_key) VALUES ($1, $2, $3)")
    /// Retired keys stay published for a day: longer than any access token they signed can live.
    static let selectPublished = PostgresStatement(
        name: "identity_select_published_signing_keys",
        sql: """
            SELECT kid, public_key, created_at, retired_at FROM signing_keys
            WHERE retired_at IS NULL OR retired_at > now() - interval '1 day' ORDER BY created_at
            """)

    /// A signer for the newest active key, creating the first key when there is none.
    ///
    /// Two replicas starting together may each create one; both stay active and published, which is harmless.
    func activeSigner(secrets: SecretKeyRing) async throws -> AccessTokenSigner {
        if let row = try await database.execute(Self.selectActive, []).first {
            let keyID = try row.decode(String.self, column: "kid")
            let sealed = try row.decode([UInt8].self, column: "private_key_sealed")
            let key: Ed25519PrivateKey
            do {
                key = try Ed25519PrivateKey(
                    rawRepresentation: secrets.open(sealed, context: SecretSealing.signingKeyContext(keyID)))
            } catch {
                throw IdentityError.internalError(
                    "the token signing key \(keyID) cannot be unsealed with RAVE_SECRET_KEY_FILE: \(error.message)")
            }
            return AccessTokenSigner(keyID: keyID, privateKey: key)
        }
        let key = try Ed25519PrivateKey()
        let keyID = RaveID.random().hex.prefix(16).description
        let sealed = try secrets.seal(try key.rawRepresentation(), context: SecretSealing.signingKeyContext(keyID))
        _ = try await database.execute(Self.insert, [keyID, sealed, try key.publicKey().rawRepresentation])
        return AccessTokenSigner(keyID: keyID, privateKey: key)
    }

    func publishedKeys() async throws -> [IdentityV1.SigningKey] {
        return try await database.execute(Self.selectPublished, []).map { row in
            IdentityV1.SigningKey(
                kid: try row.decode(column: "kid"), algorithm: "EdDSA", publicKey: try row.decode(column: "public_key"),
                createdAtUnixMs: try row.decode(Date.self, column: "created_at").unixMilliseconds,
                retiredAtUnixMs: try row.decode(Date?.self, column: "retired_at")?.unixMilliseconds ?? 0)
        }
    }
}
