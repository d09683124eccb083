import Foundation

/// Who a provider says signed in: the result of a verified ID token.
public struct VerifiedIdentity: Sendable, Hashable {
    /// The provider that issued the token.
    public var provider: OIDCProvider
    /// The provider's stable user id (`sub`), unique per provider.
    public var subject: String
    /// The email address, only when the provider vouches that it is verified.
    public var email: String?
    /// The display name, when the token carries one.
    public var name: String?
    /// The picture URL, when the token carries one.
    public var picture: String?
}

/// Verifies OIDC ID tokens from Google, Apple and Facebook Limited Login against each provider's configured keys.
///
/// Checks, in order: the algorithm (RS256 or ES256 only, and the one the key is for), the key id, the signature,
/// then issuer, audience, `exp`/`iat`/`nbf` with `clockSkew`, and the nonce when the caller gives one.
public struct OIDCVerifier: Sendable {
    private struct Provider: Sendable {
        var configuration: OIDCProviderConfiguration
        var keys: JSONWebKeySetFile
    }

    private let providers: [OIDCProvider: Provider]
    /// How far clocks may disagree, in seconds.
    public let clockSkew: Int64

    /// Longer tokens are refused unread; real ID tokens are 1–2 KB.
    static let maximumTokenLength = 16384

    /// Creates a verifier for the configured providers; JWKS files are read on first use and when they change,
    /// checked at most once per `reloadInterval`.
    public init(
        configurations: [OIDCProviderConfiguration], clockSkew: Int64 = 60, reloadInterval: Duration = .seconds(5)
    ) {
        var providers: [OIDCProvider: Provider] = [:]
        for configuration in configurations {
            providers[configuration.provider] = Provider(
                configuration: configuration,
                keys: JSONWebKeySetFile(path: configuration.jwksPath, reloadInterval: reloadInterval))
        }
        self.providers = providers
        self.clockSkew = clockSkew
    }

    /// True when logins with `provider` are configured.
    public func isConfigured(_ provider: OIDCProvider) -> Bool { providers[provider] != nil }

    /// Verifies an ID token from `provider` and returns the identity it asserts.
    ///
    /// Throws `CryptoError` `.invalidToken` (forged, wrong key/issuer/audience/nonce, rejected algorithm),
    /// `.expiredToken`, `.invalidArgument` (provider not configured) or `.configuration` (no usable key file).
    public func verify(
        idToken: String, from provider: OIDCProvider, nonce: String? = nil, now: Date = Date()
    )
        throws(CryptoError) -> VerifiedIdentity
    {
        guard let configured = providers[provider] else {
            throw .invalidArgument("sign-in with \(provider.rawValue) is not enabled on this server")
        }
        guard idToken.utf8.count <= Self.maximumTokenLength else { throw .invalidToken("ID token is too long") }
        let parts = idToken.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(Substring(parts[0])),
            let payloadBytes = Base64URL.decode(Substring(parts[1])),
            let signature = Base64URL.decode(Substring(parts[2]))
        else {
            throw .invalidToken("ID token must be three base64url parts separated by dots")
        }

        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerBytes))
        } catch {
            throw .invalidToken("ID token header is not valid JSON with alg")
        }
        guard let algorithm = JSONWebSignatureAlgorithm(rawValue: header.alg) else {
            throw .invalidToken("ID token algorithm must be RS256 or ES256, got \(header.alg)")
        }
        guard header.crit == nil else { throw .invalidToken("ID token has unsupported critical headers") }
        guard let keyID = header.kid, let key = try configured.keys.key(forKeyID: keyID) else {
            throw .invalidToken("ID token key id is not one of \(provider.rawValue)'s keys")
        }
        guard key.algorithm == algorithm else {
            throw .invalidToken(
                "ID token algorithm \(algorithm.rawValue) does not match its key (\(key.algorithm.rawValue))")
        }
        let signingInput = Array(idToken.utf8.prefix(parts[0].count + 1 + parts[1].count))
        guard key.isValidSignature(signature, for: signingInput, algorithm: algorithm) else {
            throw .invalidToken("ID token signature is invalid")
        }

        let claims: Claims
        do {
            claims = try JSONDecoder().decode(Claims.self, from: Data(payloadBytes))
        } catch {
            throw .invalidToken("ID token claims are not valid JSON with iss, sub, aud, exp and iat")
        }
        try check(claims, against: configured.configuration, nonce: nonce, now: now)
        let emailVerified = claims.emailVerified ?? provider.emailIsVerifiedWithoutClaim
        return VerifiedIdentity(
            provider: provider, subject: claims.sub, email: emailVerified ? claims.email : nil, name: claims.name,
            picture: claims.picture)
    }

    private func check(
        _ claims: Claims, against configuration: OIDCProviderConfiguration, nonce: String?, now: Date
    )
        throws(CryptoError)
    {
        guard configuration.issuers.contains(claims.iss) else {
            throw .invalidToken("ID token issuer \(claims.iss) is not \(configuration.provider.rawValue)'s")
        }
        guard claims.aud.contains(where: configuration.audiences.contains) else {
            throw .invalidToken("ID token audience is not one of this server's client ids")
        }
        guard !claims.sub.isEmpty else { throw .invalidToken("ID token has an empty subject") }
        let seconds = now.timeIntervalSince1970
        let skew = Double(clockSkew)
        guard seconds < claims.exp + skew else { throw .expiredToken("ID token has expired") }
        guard claims.iat <= seconds + skew else { throw .invalidToken("ID token is issued in the future") }
        if let notBefore = claims.nbf, notBefore > seconds + skew {
            throw .invalidToken("ID token is not valid yet")
        }
        if let nonce, claims.nonce != nonce {
            throw .invalidToken("ID token nonce does not match the one this login started with")
        }
    }

    // MARK: - Token JSON

    private struct Header: Decodable {
        var alg: String
        var kid: String?
        var crit: [String]?
    }

    private struct Claims: Decodable {
        var iss: String
        var sub: String
        var aud: [String]
        var exp: Double
        var iat: Double
        var nbf: Double?
        var nonce: String?
        var email: String?
        var emailVerified: Bool?
        var name: String?
        var picture: String?

        enum CodingKeys: String, CodingKey {
            case iss, sub, aud, exp, iat, nbf, nonce, email, name, picture
            case emailVerified = "email_verified"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            iss = try container.decode(String.self, forKey: .iss)
            sub = try container.decode(String.self, forKey: .sub)
            // RFC 7519: aud is one string or an array of strings.
            if let single = try? container.decode(String.self, forKey: .aud) {
                aud = [single]
            } else {
                aud = try container.decode([String].self, forKey: .aud)
            }
            exp = try container.decode(Double.self, forKey: .exp)
            iat = try container.decode(Double.self, forKey: .iat)
            nbf = try container.decodeIfPresent(Double.self, forKey: .nbf)
            nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
            email = try container.decodeIfPresent(String.self, forKey: .email)
            // Apple sends email_verified as the string "true"; Google as a boolean.
            if let flag = try? container.decodeIfPresent(Bool.self, forKey: .emailVerified) {
                emailVerified = flag
            } else if let text = try? container.decodeIfPresent(String.self, forKey: .emailVerified) {
                emailVerified = text == "true"
            }
            name = try? container.decodeIfPresent(String.self, forKey: .name)
            picture = try? container.decodeIfPresent(String.self, forKey: .picture)
        }
    }
}
