import COpenSSL
import Foundation

/// Signs JSON Web Tokens with a PEM private key: ES256 for APNs provider tokens, RS256 for Google's OAuth2
/// service-account assertions.
final class JWTSigner: Sendable {
    enum Algorithm: String, Sendable {
        case es256 = "ES256"
        case rs256 = "RS256"
    }

    let algorithm: Algorithm
    // EVP_PKEY is immutable once loaded and OpenSSL allows concurrent signing with it; the pointer stays here.
    nonisolated(unsafe) private let key: OpaquePointer

    init(privateKeyPEM: String, algorithm: Algorithm) throws(PushError) {
        let loaded: OpaquePointer? = privateKeyPEM.withCString { text in
            guard let bio = BIO_new_mem_buf(text, -1) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let loaded else {
            throw PushError(.configuration, "the \(algorithm.rawValue) key is not a PEM private key")
        }
        let expected = algorithm == .es256 ? EVP_PKEY_EC : EVP_PKEY_RSA
        guard EVP_PKEY_get_base_id(loaded) == expected else {
            EVP_PKEY_free(loaded)
            throw PushError(
                .configuration, "\(algorithm.rawValue) needs an \(algorithm == .es256 ? "EC P-256" : "RSA") key")
        }
        key = loaded
        self.algorithm = algorithm
    }

    deinit { EVP_PKEY_free(key) }

    /// `header.claims.signature`, each part base64url; `headerFields` are added to `alg` and `typ`.
    func token(headerFields: [(String, String)], claims: JSONObject) throws(PushError) -> String {
        var header = JSONObject()
        header.add("alg", algorithm.rawValue)
        header.add("typ", "JWT")
        for (name, value) in headerFields { header.add(name, value) }
        let signingInput = Self.base64URL(Array(header.text.utf8)) + "." + Self.base64URL(Array(claims.text.utf8))
        let signature = try sign(Array(signingInput.utf8))
        return signingInput + "." + Self.base64URL(signature)
    }

    private func sign(_ message: [UInt8]) throws(PushError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw PushError(.configuration, "EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw PushError(.configuration, "cannot start a \(algorithm.rawValue) signature")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw PushError(.configuration, "cannot size a \(algorithm.rawValue) signature")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw PushError(.configuration, "\(algorithm.rawValue) signing failed")
        }
        signature.removeLast(signature.count - length)
        return algorithm == .es256 ? try Self.rawECDSASignature(der: signature) : signature
    }

    /// JWS wants ES256 signatures as r‖s, 32 bytes each; OpenSSL produces DER.
    private static func rawECDSASignature(der: [UInt8]) throws(PushError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw PushError(.configuration, "OpenSSL returned a malformed ECDSA signature") }
        defer { ECDSA_SIG_free(parsed) }
        var r = [UInt8](repeating: 0, count: 32)
        var s = [UInt8](repeating: 0, count: 32)
        guard let rNumber = ECDSA_SIG_get0_r(parsed), let sNumber = ECDSA_SIG_get0_s(parsed),
            BN_bn2binpad(rNumber, &r, 32) == 32, BN_bn2binpad(sNumber, &s, 32) == 32
        else { throw PushError(.configuration, "OpenSSL returned an ECDSA signature that is not P-256") }
        return r + s
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
