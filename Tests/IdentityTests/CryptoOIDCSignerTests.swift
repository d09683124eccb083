import Foundation
import RaveCrypto
import Testing

@testable import Identity

// A test-only OIDC provider: generates RSA and P-256 keys, publishes them as a JWKS file and signs ID tokens
// with them, so the verifier is tested against real signatures without a network.

/// A provider signing key with its JWK form.
final class TestProviderKey: Sendable {
    private enum Key: Sendable {
        case rsa(RSAPrivateKey)
        case p256(P256PrivateKey)
    }

    private let key: Key
    let keyID: String
    let algorithm: String

    private init(key: Key, keyID: String, algorithm: String) {
        self.key = key
        self.keyID = keyID
        self.algorithm = algorithm
    }

    /// A 2048-bit RSA key (RS256).
    static func rsa(_ keyID: String = "rsa-\(UUID().uuidString.prefix(8))") throws -> TestProviderKey {
        TestProviderKey(key: .rsa(try RSAPrivateKey(bits: 2048)), keyID: keyID, algorithm: "RS256")
    }

    /// A P-256 key (ES256).
    static func p256(_ keyID: String = "ec-\(UUID().uuidString.prefix(8))") throws -> TestProviderKey {
        TestProviderKey(key: .p256(try P256PrivateKey()), keyID: keyID, algorithm: "ES256")
    }

    /// The public JWK, as a JSON object literal.
    func jwk() throws -> String {
        switch key {
        case .rsa(let key):
            let publicKey = try key.publicKey()
            let n = Base64URL.encode(publicKey.modulus)
            let e = Base64URL.encode(publicKey.exponent)
            return
                "{\"kty\":\"RSA\",\"kid\":\"\(keyID)\",\"use\":\"sig\",\"alg\":\"RS256\",\"n\":\"\(n)\",\"e\":\"\(e)\"}"
        case .p256(let key):
            let publicKey = try key.publicKey()
            let x = Base64URL.encode(publicKey.x)
            let y = Base64URL.encode(publicKey.y)
            return
                "{\"kty\":\"EC\",\"kid\":\"\(keyID)\",\"use\":\"sig\",\"crv\":\"P-256\",\"x\":\"\(x)\",\"y\":\"\(y)\"}"
        }
    }

    /// Signs `message` with SHA-256, returning the JOSE form (raw r||s for ES256).
    func sign(_ message: [UInt8]) throws -> [UInt8] {
        switch key {
        case .rsa(let key): try key.signature(for: message)
        case .p256(let key): try key.signature(for: message)
        }
    }
}

/// Signs ID tokens the way a provider does and writes its JWKS to a private temporary file.
struct TestOIDCProvider {
    let directory: URL
    let jwksPath: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-oidc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        jwksPath = directory.appendingPathComponent("jwks.json").path
    }

    /// Publishes exactly `keys`.
    func publish(_ keys: [TestProviderKey]) throws {
        let document = "{\"keys\":[" + (try keys.map { try $0.jwk() }).joined(separator: ",") + "]}"
        try writeJWKS(document)
    }

    /// Replaces the JWKS file's content atomically (as a deployment would).
    func writeJWKS(_ content: String) throws {
        try Data(content.utf8).write(to: URL(fileURLWithPath: jwksPath), options: .atomic)
    }

    func removeFiles() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A compact JWT of `claims` (a JSON object literal) signed by `key`, with `header` overriding the default.
    func token(claims: String, key: TestProviderKey, header: String? = nil) throws -> String {
        let header = header ?? "{\"alg\":\"\(key.algorithm)\",\"kid\":\"\(key.keyID)\",\"typ\":\"JWT\"}"
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
    }
}

@Suite("Test OIDC signer")
struct CryptoOIDCSignerTests {
    @Test func generatedKeysProduceWellFormedJWKs() throws {
        let rsa = try TestProviderKey.rsa()
        let ec = try TestProviderKey.p256("ec")
        let rsaJWK = try #require(try JSONSerialization.jsonObject(with: Data(rsa.jwk().utf8)) as? [String: String])
        #expect(Base64URL.decode(try #require(rsaJWK["n"]))?.count == 256)
        #expect(rsaJWK["e"] == "AQAB")
        let ecJWK = try #require(try JSONSerialization.jsonObject(with: Data(ec.jwk().utf8)) as? [String: String])
        #expect(Base64URL.decode(try #require(ecJWK["x"]))?.count == 32)
        #expect(try ec.sign([1, 2, 3]).count == 64)
    }
}
