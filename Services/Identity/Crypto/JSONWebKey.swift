import RaveCrypto

// Public keys of OIDC providers (RSA and EC P-256 JWKs), read into RaveCrypto's key types; the rest of the OIDC code
// sees `JSONWebKey`.

/// A signature algorithm an ID token may use.
///
/// Anything else (none, HS256, PS256, …) is rejected by name.
public enum JSONWebSignatureAlgorithm: String, Sendable {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (Google, Facebook, Apple).
    case rs256 = "RS256"
    /// ECDSA on P-256 with SHA-256; the JOSE signature is raw r||s, 64 bytes.
    case es256 = "ES256"
}

/// A provider's verification key, read from one entry of its JWKS (RFC 7517/7518).
final class JSONWebKey: Sendable {
    private enum Key: Sendable {
        case rsa(RSAPublicKey)
        case p256(P256PublicKey)
    }

    private let key: Key

    /// The key id tokens name in their `kid` header.
    let keyID: String
    /// The only algorithm this key verifies, from its type (and its `alg` member when present).
    let algorithm: JSONWebSignatureAlgorithm

    /// Smaller RSA keys are refused: every provider we accept publishes 2048-bit keys or larger.
    static let minimumRSABits = 2048

    /// Builds a key from a JWK's members: `kty` RSA with `n`/`e`, or `kty` EC with `crv` P-256 and `x`/`y`.
    init(keyID: String, members: [String: String]) throws(CryptoError) {
        self.keyID = keyID
        switch members["kty"] {
        case "RSA":
            guard let modulus = members["n"].flatMap(Base64URL.decode),
                let exponent = members["e"].flatMap(Base64URL.decode),
                !modulus.isEmpty, !exponent.isEmpty
            else {
                throw .configuration("RSA JWK \(keyID) needs base64url n and e")
            }
            let rsa: RSAPublicKey
            do {
                rsa = try RSAPublicKey(modulus: modulus, exponent: exponent)
            } catch {
                throw .configuration("RSA JWK \(keyID) is not a valid key: \(error.message)")
            }
            guard rsa.bitCount >= Self.minimumRSABits else {
                throw .configuration("RSA JWK \(keyID) is shorter than \(Self.minimumRSABits) bits")
            }
            key = .rsa(rsa)
            algorithm = .rs256
        case "EC":
            guard members["crv"] == "P-256" else {
                throw .configuration("EC JWK \(keyID) must use curve P-256, got \(members["crv"] ?? "none")")
            }
            guard let x = members["x"].flatMap(Base64URL.decode), let y = members["y"].flatMap(Base64URL.decode),
                x.count == 32, y.count == 32
            else {
                throw .configuration("EC JWK \(keyID) needs 32-byte base64url x and y")
            }
            do {
                key = .p256(try P256PublicKey(x: x, y: y))
            } catch {
                throw .configuration("EC JWK \(keyID) is not a valid P-256 key: \(error.message)")
            }
            algorithm = .es256
        default:
            throw .configuration("JWK \(keyID) has unsupported kty \(members["kty"] ?? "none"); RSA and EC are allowed")
        }
        if let declared = members["alg"], declared != algorithm.rawValue {
            throw .configuration(
                "JWK \(keyID) declares alg \(declared) but its key type verifies \(algorithm.rawValue)")
        }
    }

    /// True when `signature` (JOSE form) over `message` is valid for this key under `algorithm`.
    func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: JSONWebSignatureAlgorithm) -> Bool {
        guard algorithm == self.algorithm else { return false }
        switch key {
        case .rsa(let key): return key.isValidSignature(signature, for: message)
        case .p256(let key): return key.isValidSignature(signature, for: message)
        }
    }
}
