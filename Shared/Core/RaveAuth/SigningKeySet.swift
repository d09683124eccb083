import Foundation
import RaveJSON

/// The public keys access tokens may be signed with, by key id: what the SigningKeys method serves and what the
/// gateway builds its `AccessTokenVerifier` from.
///
/// JSON form is a JWKS (RFC 7517) of OKP keys: `{"keys":[{"kty":"OKP","crv":"Ed25519","alg":"EdDSA","use":"sig",
/// "kid":…,"x":…}]}`; on the protocol each key is simply (kid, raw 32-byte public key).
public struct SigningKeySet: Sendable {
    /// One verification key.
    public struct Key: Sendable {
        /// The key id tokens name in their `kid` header.
        public var keyID: String
        /// The Ed25519 public key.
        public var publicKey: Ed25519PublicKey

        /// Creates a key entry.
        public init(keyID: String, publicKey: Ed25519PublicKey) {
            self.keyID = keyID
            self.publicKey = publicKey
        }
    }

    /// The keys, in the order given.
    public let keys: [Key]
    private let keysByID: [String: Ed25519PublicKey]

    /// Creates a set; a later key with a duplicate id replaces an earlier one.
    public init(keys: [Key]) {
        self.keys = keys
        self.keysByID = Dictionary(keys.map { ($0.keyID, $0.publicKey) }, uniquingKeysWith: { _, last in last })
    }

    /// The key with id `keyID`, if the set has it.
    public func publicKey(forKeyID keyID: String) -> Ed25519PublicKey? { keysByID[keyID] }

    /// The RFC 7638 JWK thumbprint of an Ed25519 public key: a stable key id derived from the key itself.
    public static func thumbprint(of publicKey: Ed25519PublicKey) -> String {
        let canonical =
            "{\"crv\":\"Ed25519\",\"kty\":\"OKP\",\"x\":\"\(Base64URL.encode(publicKey.rawRepresentation))\"}"
        return Base64URL.encode(Digest.sha256(canonical))
    }

    // MARK: - JWKS

    /// The set as a JWKS document.
    public func jwksJSON() -> String {
        let entries = keys.map { key in
            "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"alg\":\"EdDSA\",\"use\":\"sig\",\"kid\":\(JSONString.quoted(key.keyID))"
                + ",\"x\":\"\(Base64URL.encode(key.publicKey.rawRepresentation))\"}"
        }
        return "{\"keys\":[" + entries.joined(separator: ",") + "]}"
    }

    /// Reads a JWKS document, keeping the Ed25519 keys and rejecting a malformed one.
    public init(jwksJSON: String) throws(CryptoError) {
        struct Document: Decodable {
            struct Entry: Decodable {
                var kty: String
                var crv: String?
                var kid: String?
                var x: String?
            }
            var keys: [Entry]
        }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(jwksJSON.utf8))
        } catch {
            throw .invalidArgument("signing key set is not a JWKS document: \(error)")
        }
        var keys: [Key] = []
        for entry in document.keys where entry.kty == "OKP" && entry.crv == "Ed25519" {
            guard let keyID = entry.kid, let x = entry.x, let raw = Base64URL.decode(x) else {
                throw .invalidArgument("Ed25519 JWK needs kid and a base64url x")
            }
            keys.append(Key(keyID: keyID, publicKey: try Ed25519PublicKey(rawRepresentation: raw)))
        }
        self.init(keys: keys)
    }
}
