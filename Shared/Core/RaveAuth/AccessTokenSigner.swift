import Foundation
import RaveJSON

/// Issues access tokens: compact JWTs signed with one Ed25519 key (about 50 µs each, see `CryptoTokenTests`).
public struct AccessTokenSigner: Sendable {
    /// The id of the signing key, written in every token's `kid` header.
    public let keyID: String
    /// The issuer written in `iss`.
    public let issuer: String
    private let privateKey: Ed25519PrivateKey
    private let encodedHeader: [UInt8]

    /// Creates a signer for the key `privateKey` published under `keyID`.
    public init(keyID: String, privateKey: Ed25519PrivateKey, issuer: String = AccessTokenClaims.defaultIssuer) {
        self.keyID = keyID
        self.issuer = issuer
        self.privateKey = privateKey
        // The header never changes for a key, so it is encoded once.
        let header = "{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\(JSONString.quoted(keyID))}"
        self.encodedHeader = Array(Base64URL.encode(Array(header.utf8)).utf8)
    }

    /// A signed token and the claims it carries.
    public struct IssuedToken: Sendable {
        /// The compact JWT.
        public var token: String
        /// Its claims (for the response's expiry field and for logging).
        public var claims: AccessTokenClaims
    }

    /// Issues a token for a session, valid for `lifetime` seconds from `now`, with a random `jti`.
    public func issue(
        subject: String, applicationID: String, sessionID: String, scopes: [String], lifetime: Int64 = 900,
        now: Date = Date()
    ) throws(CryptoError) -> IssuedToken {
        let issuedAt = Int64(now.timeIntervalSince1970)
        let claims = AccessTokenClaims(
            issuer: issuer, subject: subject, applicationID: applicationID, sessionID: sessionID, scopes: scopes,
            issuedAt: issuedAt, expiresAt: issuedAt + lifetime,
            tokenID: Base64URL.encode(try SecureRandom.bytes(count: 12)))
        return IssuedToken(token: try sign(claims), claims: claims)
    }

    /// Signs `claims` as they are (the caller chooses every field, including `iss`).
    ///
    /// The token is assembled in one buffer, which is also the signing input until the signature is appended.
    public func sign(_ claims: AccessTokenClaims) throws(CryptoError) -> String {
        let json = claims.jsonBytes
        var token: [UInt8] = []
        token.reserveCapacity(encodedHeader.count + Base64URL.encodedCount(json.count) + Base64URL.encodedCount(64) + 2)
        token += encodedHeader
        token.append(UInt8(ascii: "."))
        json.withUnsafeBytes { Base64URL.append($0, to: &token) }
        let signature = try privateKey.signature(for: token)
        token.append(UInt8(ascii: "."))
        signature.withUnsafeBytes { Base64URL.append($0, to: &token) }
        return String(decoding: token, as: UTF8.self)
    }
}
