import Foundation

/// Verifies Rave access tokens offline, from the public keys alone (no database).
///
/// Used by the identity service and by the gateway, which caches verified tokens. About 100 µs per token, nearly
/// all of it OpenSSL's Ed25519 verification (JSON parsing is ~5 µs; see `CryptoTokenTests`).
///
/// Accepts exactly `alg` "EdDSA" with a known `kid`; rejects "none", HMAC and every other algorithm before
/// looking at the signature, so a token can't choose how it is checked.
public struct AccessTokenVerifier: Sendable {
    /// The keys tokens may be signed with.
    public let keys: SigningKeySet
    /// The only issuer accepted.
    public let issuer: String
    /// How far clocks may disagree, in seconds, when checking `exp` and `iat`.
    public let clockSkew: Int64
    /// The skew every verifier of ours uses unless told otherwise (identity's and the gateway's).
    public static let defaultClockSkew: Int64 = 30

    /// Longer tokens are refused unread; ours are about 400 bytes.
    static let maximumTokenLength = 8192

    /// Creates a verifier for tokens signed by any key of `keys`.
    public init(
        keys: SigningKeySet, issuer: String = AccessTokenClaims.defaultIssuer,
        clockSkew: Int64 = AccessTokenVerifier.defaultClockSkew
    ) {
        self.keys = keys
        self.issuer = issuer
        self.clockSkew = clockSkew
    }

    /// Checks a token's form, algorithm, key, signature, issuer and lifetime, and returns its claims.
    ///
    /// Throws `CryptoError` with reason `.invalidToken` (malformed, forged, wrong key or issuer) or
    /// `.expiredToken`; both mean UNAUTHENTICATED to the caller.
    public func verify(_ token: String, now: Date = Date()) throws(CryptoError) -> AccessTokenClaims {
        guard token.utf8.count <= Self.maximumTokenLength else { throw .invalidToken("access token is too long") }
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .invalidToken("access token must have three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(Substring(parts[0])),
            let payloadBytes = Base64URL.decode(Substring(parts[1])),
            let signature = Base64URL.decode(Substring(parts[2]))
        else {
            throw .invalidToken("access token parts must be base64url without padding")
        }

        let publicKey = try publicKey(forHeader: headerBytes)
        let signingInput = Array(token.utf8.prefix(parts[0].count + 1 + parts[1].count))
        guard publicKey.isValidSignature(signature, for: signingInput) else {
            throw .invalidToken("access token signature is invalid")
        }

        let claims = try AccessTokenClaims(jsonBytes: payloadBytes)
        guard claims.issuer == issuer else {
            throw .invalidToken("access token issuer must be \(issuer), got \(claims.issuer)")
        }
        guard !claims.isExpired(at: now, clockSkew: clockSkew) else {
            throw .expiredToken("access token has expired")
        }
        guard claims.issuedAt <= Int64(now.timeIntervalSince1970) + clockSkew else {
            throw .invalidToken("access token is issued in the future")
        }
        return claims
    }

    /// The `kid` a token's header names, without checking anything else; nil when the header does not parse.
    ///
    /// Lets a holder of a verifier notice a key it has not fetched yet (identity rotated its keys) and refresh
    /// before rejecting the token.
    public static func keyID(ofToken token: String) -> String? {
        guard token.utf8.count <= maximumTokenLength,
            let header = token.utf8.split(separator: UInt8(ascii: "."), maxSplits: 1).first,
            let bytes = Base64URL.decode(Substring(header))
        else { return nil }
        struct Header: Decodable { var kid: String? }
        return (try? JSONDecoder().decode(Header.self, from: Data(bytes)))?.kid
    }

    private func publicKey(forHeader headerBytes: [UInt8]) throws(CryptoError) -> Ed25519PublicKey {
        struct Header: Decodable {
            var alg: String
            var typ: String?
            var kid: String?
            var crit: [String]?
        }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerBytes))
        } catch {
            throw .invalidToken("access token header is not valid JSON with alg")
        }
        guard header.alg == "EdDSA" else {
            throw .invalidToken("access token algorithm must be EdDSA, got \(header.alg)")
        }
        // RFC 7515: a "crit" extension we don't implement must make the token invalid.
        guard header.crit == nil else { throw .invalidToken("access token has unsupported critical headers") }
        if let type = header.typ, type != "JWT" { throw .invalidToken("access token typ must be JWT, got \(type)") }
        guard let keyID = header.kid, let publicKey = keys.publicKey(forKeyID: keyID) else {
            throw .invalidToken("access token key id is unknown")
        }
        return publicKey
    }
}
