import RaveCrypto

/// Opaque bearer secrets (refresh tokens, challenge ids): random, URL-safe, stored only as a hash.
public enum OpaqueToken {
    /// A new token of `byteCount` random bytes (256 bits by default), base64url encoded.
    public static func generate(byteCount: Int = 32) throws(CryptoError) -> String {
        Base64URL.encode(try SecureRandom.bytes(count: byteCount))
    }

    /// The value to store and look up: SHA-256 of the token, enough for a high-entropy secret (no salt needed).
    public static func hash(_ token: String) -> [UInt8] { Digest.sha256(token) }
}
