import Foundation
import RaveJSON

/// The claims of a Rave access token: a compact JWT signed with Ed25519 (`alg` "EdDSA").
///
/// Wire form: `base64url(header).base64url(claims).base64url(signature)` with header
/// `{"alg":"EdDSA","typ":"JWT","kid":…}` and claims `{iss, sub, app, sid, scp, iat, exp, jti}` (times in Unix
/// seconds, scopes space-separated). Ids are strings so this type needs nothing from the identity service.
public struct AccessTokenClaims: Sendable, Hashable {
    /// The issuer every Rave access token carries.
    public static let defaultIssuer = "rave-identity"

    /// `iss`: who issued the token.
    public var issuer: String
    /// `sub`: the user's Rave ID (32 lowercase hex digits).
    public var subject: String
    /// `app`: the application the session belongs to.
    public var applicationID: String
    /// `sid`: the session, so revoking a session can be checked and logged.
    public var sessionID: String
    /// `scp`: the granted scopes.
    public var scopes: [String]
    /// `iat`: when the token was issued, Unix seconds.
    public var issuedAt: Int64
    /// `exp`: when the token stops being valid, Unix seconds.
    public var expiresAt: Int64
    /// `jti`: a unique token id.
    public var tokenID: String

    /// Creates claims from their fields.
    public init(
        issuer: String = AccessTokenClaims.defaultIssuer, subject: String, applicationID: String, sessionID: String,
        scopes: [String], issuedAt: Int64, expiresAt: Int64, tokenID: String
    ) {
        self.issuer = issuer
        self.subject = subject
        self.applicationID = applicationID
        self.sessionID = sessionID
        self.scopes = scopes
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.tokenID = tokenID
    }

    /// True when the token grants `scope`.
    public func hasScope(_ scope: String) -> Bool { scopes.contains(scope) }

    /// The one rule for expiry: a token is good until `exp` plus `clockSkew` seconds (whole seconds of `now`).
    ///
    /// The verifier and every cache of verified claims (the gateway's) ask this, so a token cannot be expired on
    /// one path and live on another.
    public func isExpired(at now: Date, clockSkew: Int64 = AccessTokenVerifier.defaultClockSkew) -> Bool {
        Int64(now.timeIntervalSince1970) >= expiresAt + clockSkew
    }

    // MARK: - JSON

    /// The claims as compact JSON.
    ///
    /// Written by hand, as bytes: signing is on the token-refresh hot path, and the field set is fixed, so an
    /// encoder's generality buys nothing.
    public var jsonBytes: [UInt8] {
        let scopeText = scopes.joined(separator: " ")
        var json: [UInt8] = []
        json.reserveCapacity(
            96 + issuer.utf8.count + subject.utf8.count + applicationID.utf8.count
                + sessionID.utf8.count + scopeText.utf8.count + tokenID.utf8.count)
        json.append(contentsOf: #"{"iss":"#.utf8)
        JSONString.append(issuer, to: &json)
        json.append(contentsOf: #","sub":"#.utf8)
        JSONString.append(subject, to: &json)
        json.append(contentsOf: #","app":"#.utf8)
        JSONString.append(applicationID, to: &json)
        json.append(contentsOf: #","sid":"#.utf8)
        JSONString.append(sessionID, to: &json)
        json.append(contentsOf: #","scp":"#.utf8)
        JSONString.append(scopeText, to: &json)
        json.append(contentsOf: #","iat":"#.utf8)
        json.append(contentsOf: String(issuedAt).utf8)
        json.append(contentsOf: #","exp":"#.utf8)
        json.append(contentsOf: String(expiresAt).utf8)
        json.append(contentsOf: #","jti":"#.utf8)
        JSONString.append(tokenID, to: &json)
        json.append(UInt8(ascii: "}"))
        return json
    }

    /// Parses the claims JSON of a token whose signature has already been checked.
    public init(jsonBytes: [UInt8]) throws(CryptoError) {
        let wire: WireClaims
        do {
            wire = try JSONDecoder().decode(WireClaims.self, from: Data(jsonBytes))
        } catch {
            throw .invalidToken("access token claims are not valid JSON with iss, sub, app, sid, iat, exp")
        }
        self.init(
            issuer: wire.iss, subject: wire.sub, applicationID: wire.app, sessionID: wire.sid,
            scopes: (wire.scp ?? "").split(separator: " ").map(String.init), issuedAt: wire.iat, expiresAt: wire.exp,
            tokenID: wire.jti ?? "")
    }

    private struct WireClaims: Decodable {
        var iss: String
        var sub: String
        var app: String
        var sid: String
        var scp: String?
        var iat: Int64
        var exp: Int64
        var jti: String?
    }
}
