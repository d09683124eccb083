import COpenSSL
import Foundation
import Testing

@testable import Identity

// A test-only OIDC provider: generates RSA and P-256 keys, publishes them as a JWKS file and signs ID tokens
// with them, so the verifier is tested against real signatures without a network.

/// A provider signing key with its JWK form, wrapping the EVP_PKEY for the tests in this file only.
final class TestProviderKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is immutable after generation; OpenSSL allows concurrent signing with one key.
    private let key: OpaquePointer
    let keyID: String
    let algorithm: String

    deinit {
        EVP_PKEY_free(key)
    }

    /// Generates an RSA key of `bits` bits (RS256).
    init(rsaBits bits: UInt32, keyID: String) throws {
        let context = try #require(EVP_PKEY_CTX_new_from_name(nil, "RSA", nil))
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        try #require(EVP_PKEY_keygen_init(context) == 1)
        try #require(EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1)
        try #require(EVP_PKEY_generate(context, &generated) == 1)
        key = try #require(generated)
        self.keyID = keyID
        algorithm = "RS256"
    }

    /// Generates a P-256 key (ES256).
    init(p256KeyID keyID: String) throws {
        let context = try #require(EVP_PKEY_CTX_new_from_name(nil, "EC", nil))
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        try #require(EVP_PKEY_keygen_init(context) == 1)
        try #require(EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1)
        try #require(EVP_PKEY_generate(context, &generated) == 1)
        key = try #require(generated)
        self.keyID = keyID
        algorithm = "ES256"
    }

    /// A 2048-bit RSA key (RS256).
    static func rsa(_ keyID: String = "rsa-\(UUID().uuidString.prefix(8))") throws -> TestProviderKey {
        try TestProviderKey(rsaBits: 2048, keyID: keyID)
    }

    /// A P-256 key (ES256).
    static func p256(_ keyID: String = "ec-\(UUID().uuidString.prefix(8))") throws -> TestProviderKey {
        try TestProviderKey(p256KeyID: keyID)
    }

    /// The public JWK, as a JSON object literal.
    func jwk() throws -> String {
        if algorithm == "RS256" {
            let n = Base64URL.encode(try bigNumber("n", width: nil))
            let e = Base64URL.encode(try bigNumber("e", width: nil))
            return
                "{\"kty\":\"RSA\",\"kid\":\"\(keyID)\",\"use\":\"sig\",\"alg\":\"RS256\",\"n\":\"\(n)\",\"e\":\"\(e)\"}"
        }
        let x = Base64URL.encode(try bigNumber("qx", width: 32))
        let y = Base64URL.encode(try bigNumber("qy", width: 32))
        return "{\"kty\":\"EC\",\"kid\":\"\(keyID)\",\"use\":\"sig\",\"crv\":\"P-256\",\"x\":\"\(x)\",\"y\":\"\(y)\"}"
    }

    private func bigNumber(_ name: String, width: Int32?) throws -> [UInt8] {
        var number: OpaquePointer?
        try #require(EVP_PKEY_get_bn_param(key, name, &number) == 1)
        let value = try #require(number)
        defer { BN_free(value) }
        let length = width ?? (BN_num_bits(value) + 7) / 8
        var bytes = [UInt8](repeating: 0, count: Int(length))
        try #require(BN_bn2binpad(value, &bytes, length) == length)
        return bytes
    }

    /// Signs `message` with SHA-256, returning the JOSE form (raw r||s for ES256).
    func sign(_ message: [UInt8]) throws -> [UInt8] {
        let context = try #require(EVP_MD_CTX_new())
        defer { EVP_MD_CTX_free(context) }
        try #require(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1)
        var length = 0
        try #require(EVP_DigestSign(context, nil, &length, message, message.count) == 1)
        var signature = [UInt8](repeating: 0, count: length)
        try #require(EVP_DigestSign(context, &signature, &length, message, message.count) == 1)
        signature.removeLast(signature.count - length)
        guard algorithm == "ES256" else { return signature }
        return try rawSignature(fromDER: signature)
    }

    private func rawSignature(fromDER der: [UInt8]) throws -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        let signature = try #require(parsed)
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        try raw.withUnsafeMutableBufferPointer { buffer in
            try #require(BN_bn2binpad(ECDSA_SIG_get0_r(signature), buffer.baseAddress, 32) == 32)
            try #require(BN_bn2binpad(ECDSA_SIG_get0_s(signature), buffer.baseAddress! + 32, 32) == 32)
        }
        return raw
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
