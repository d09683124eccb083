import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// The Ed25519 keys that sign access tokens, kept in the database so every replica signs and serves the same set.
struct SigningKeyStore: Sendable {
    let database: any PostgresQueryable

    static let selectActive = PostgresStatement(
        name: "identity_select_active_signing_key",
        sql: """
            SELECT kid, private_key FROM signing_keys WHERE retired_at IS NULL ORDER BY created_at DESC, kid LIMIT 1
            """)
    static let insert = PostgresStatement(
        name: "identity_insert_signing_key",
        sql: "INSERT INTO signing_keys (kid, private_key, public_key) VALUES ($1, $2, $3)")
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
    func activeSigner() async throws -> AccessTokenSigner {
        if let row = try await database.execute(Self.selectActive, []).first {
            let key = try Ed25519PrivateKey(pem: try row.decode(String.self, column: "private_key"))
            return AccessTokenSigner(keyID: try row.decode(String.self, column: "kid"), privateKey: key)
        }
        let key = try Ed25519PrivateKey()
        let keyID = RaveID.random().hex.prefix(16).description
        _ = try await database.execute(
            Self.insert, [keyID, try key.pemRepresentation(), try key.publicKey().rawRepresentation])
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
