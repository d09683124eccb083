import COpenSSL
import Foundation
import RaveAuth

/// Google, Apple and Facebook as local OIDC issuers for the identity executable: one RSA key each, published as a
/// JWKS file that identity reads (RAVE_OIDC_<PROVIDER>_JWKS), signing RS256 ID tokens as the real providers do.
final class TestIdentityProviders: @unchecked Sendable {
    // @unchecked: the EVP_PKEYs are immutable after generation; OpenSSL allows concurrent signing with one key.
    static let audience = "com.example.rave.game"

    /// A provider as identity's environment variables and the tokens' issuer claim name it.
    enum Provider: String, CaseIterable, Sendable {
        case google = "GOOGLE"
        case apple = "APPLE"
        case facebook = "FACEBOOK"

        var issuer: String {
            switch self {
            case .google: "https://accounts.google.com"
            case .apple: "https://appleid.apple.com"
            case .facebook: "https://www.facebook.com"
            }
        }
    }

    private let keys: [Provider: OpaquePointer]
    private let directory: URL

    deinit {
        for key in keys.values { EVP_PKEY_free(key) }
    }

    /// Generates the keys and writes `<provider>-jwks.json` files into `directory`.
    init(directory: URL) throws {
        self.directory = directory
        var keys: [Provider: OpaquePointer] = [:]
        for provider in Provider.allCases {
            guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
                throw StackError("EVP_PKEY_CTX_new_from_name failed")
            }
            defer { EVP_PKEY_CTX_free(context) }
            var generated: OpaquePointer?
            guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, 2048) == 1,
                EVP_PKEY_generate(context, &generated) == 1, let key = generated
            else { throw StackError("cannot generate the \(provider) key") }
            keys[provider] = key
        }
        self.keys = keys
        for provider in Provider.allCases {
            let document = "{\"keys\":[\(try jwk(provider))]}"
            try Data(document.utf8).write(to: jwksURL(provider), options: .atomic)
        }
    }

    /// The settings that make identity accept these providers' tokens.
    var identityEnvironment: [String: String] {
        var environment: [String: String] = [:]
        for provider in Provider.allCases {
            environment["RAVE_OIDC_\(provider.rawValue)_JWKS"] = jwksURL(provider).path
            environment["RAVE_OIDC_\(provider.rawValue)_AUDIENCE"] = Self.audience
        }
        return environment
    }

    /// An ID token for `subject`, valid for an hour.
    func token(_ provider: Provider, subject: String, email: String? = nil) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        var claims = [
            "\"iss\":\"\(provider.issuer)\"", "\"sub\":\"\(subject)\"", "\"aud\":\"\(Self.audience)\"",
            "\"iat\":\(now - 10)", "\"exp\":\(now + 3600)",
        ]
        if let email { claims += ["\"email\":\"\(email)\"", "\"email_verified\":true"] }
        let header = "{\"alg\":\"RS256\",\"kid\":\"\(keyID(provider))\",\"typ\":\"JWT\"}"
        let input =
            Base64URL.encode(Array(header.utf8)) + "."
            + Base64URL.encode(Array("{\(claims.joined(separator: ","))}".utf8))
        return input + "." + Base64URL.encode(try sign(Array(input.utf8), provider: provider))
    }

    // MARK: - Keys

    private func jwksURL(_ provider: Provider) -> URL {
        directory.appendingPathComponent("\(provider.rawValue.lowercased())-jwks.json")
    }

    private func keyID(_ provider: Provider) -> String { "\(provider.rawValue.lowercased())-key" }

    private func jwk(_ provider: Provider) throws -> String {
        let n = Base64URL.encode(try bigNumber("n", provider: provider))
        let e = Base64URL.encode(try bigNumber("e", provider: provider))
        return "{\"kty\":\"RSA\",\"kid\":\"\(keyID(provider))\",\"use\":\"sig\",\"alg\":\"RS256\",\"n\":\"\(n)\","
            + "\"e\":\"\(e)\"}"
    }

    private func bigNumber(_ name: String, provider: Provider) throws -> [UInt8] {
        var number: OpaquePointer?
        guard let key = keys[provider], EVP_PKEY_get_bn_param(key, name, &number) == 1, let value = number else {
            throw StackError("cannot read \(name) of the \(provider) key")
        }
        defer { BN_free(value) }
        let length = (BN_num_bits(value) + 7) / 8
        var bytes = [UInt8](repeating: 0, count: Int(length))
        guard BN_bn2binpad(value, &bytes, length) == length else { throw StackError("BN_bn2binpad failed") }
        return bytes
    }

    private func sign(_ message: [UInt8], provider: Provider) throws -> [UInt8] {
        guard let key = keys[provider], let context = EVP_MD_CTX_new() else {
            throw StackError("EVP_MD_CTX_new failed")
        }
        defer { EVP_MD_CTX_free(context) }
        var length = 0
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
            EVP_DigestSign(context, nil, &length, message, message.count) == 1
        else { throw StackError("EVP_DigestSignInit failed") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw StackError("EVP_DigestSign failed")
        }
        return Array(signature.prefix(length))
    }
}
