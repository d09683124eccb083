import Foundation
import RaveAuth
import RaveCrypto

/// Google, Apple and Facebook as local OIDC issuers for the identity executable: one RSA key each, published as a
/// JWKS file that identity reads (RAVE_OIDC_<PROVIDER>_JWKS), signing RS256 ID tokens as the real providers do.
final class TestIdentityProviders: Sendable {
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

    private let keys: [Provider: RSAPrivateKey]
    private let directory: URL

    /// Generates the keys and writes `<provider>-jwks.json` files into `directory`.
    init(directory: URL) throws {
        self.directory = directory
        var keys: [Provider: RSAPrivateKey] = [:]
        for provider in Provider.allCases { keys[provider] = try RSAPrivateKey(bits: 2048) }
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
        guard let key = keys[provider] else { throw StackError("no key for \(provider)") }
        let publicKey = try key.publicKey()
        let n = Base64URL.encode(publicKey.modulus)
        let e = Base64URL.encode(publicKey.exponent)
        return "{\"kty\":\"RSA\",\"kid\":\"\(keyID(provider))\",\"use\":\"sig\",\"alg\":\"RS256\",\"n\":\"\(n)\","
            + "\"e\":\"\(e)\"}"
    }

    private func sign(_ message: [UInt8], provider: Provider) throws -> [UInt8] {
        guard let key = keys[provider] else { throw StackError("no key for \(provider)") }
        return try key.signature(for: message)
    }
}
