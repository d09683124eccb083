/// An Ed25519 private key (RFC 8032): signs Rave access tokens.
///
/// Generation, PKCS#8 PEM, and the raw 32-byte seed (what identity stores, sealed).
public final class Ed25519PrivateKey: Sendable {
    private let key: OpenSSLKey
    /// Started once: every access token is signed with this key, and a copy of a started context costs less.
    private let signing: PreparedSignature

    private init(key: OpenSSLKey) throws(CryptoError) {
        self.key = key
        self.signing = try key.preparedSignature(digest: .none, signatureLength: 64)
    }

    /// Generates a new random key.
    public convenience init() throws(CryptoError) {
        try self.init(key: OpenSSLKey.generate(.ed25519))
    }

    /// Reads a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`); it must be an Ed25519 key.
    public convenience init(pem: String) throws(CryptoError) {
        let key = try OpenSSLKey.privateKey(pem: pem)
        guard key.kind == .ed25519 else { throw .invalidArgument("PEM private key is not an Ed25519 key") }
        try self.init(key: key)
    }

    /// A key from its 32-byte seed (the "secret key" of RFC 8032's test vectors).
    public convenience init(rawRepresentation raw: [UInt8]) throws(CryptoError) {
        try self.init(key: OpenSSLKey.ed25519PrivateKey(raw: raw))
    }

    /// The 32-byte seed; a secret, to be stored only sealed.
    public func rawRepresentation() throws(CryptoError) -> [UInt8] {
        try key.rawPrivateKey()
    }

    /// The key as PKCS#8 PEM.
    public func pemRepresentation() throws(CryptoError) -> String {
        try key.privatePEM()
    }

    /// The matching public key.
    public func publicKey() throws(CryptoError) -> Ed25519PublicKey {
        try Ed25519PublicKey(rawRepresentation: key.rawPublicKey())
    }

    /// Signs `message`, returning the 64-byte signature.
    ///
    /// Ed25519 hashes internally, so there is no digest to choose.
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try signing.signature(for: message)
    }
}

/// An Ed25519 public key: verifies access tokens.
///
/// Served to the gateway as raw 32 bytes (JWK `x`).
public final class Ed25519PublicKey: Sendable {
    private let key: OpenSSLKey

    /// The raw 32-byte public key (RFC 8032), as carried in a JWK's `x`.
    public let rawRepresentation: [UInt8]

    private init(key: OpenSSLKey, raw: [UInt8]) {
        self.key = key
        self.rawRepresentation = raw
    }

    /// Creates a key from its raw 32 bytes.
    public convenience init(rawRepresentation raw: [UInt8]) throws(CryptoError) {
        self.init(key: try OpenSSLKey.ed25519PublicKey(raw: raw), raw: raw)
    }

    /// Reads a PEM public key (`-----BEGIN PUBLIC KEY-----`); it must be an Ed25519 key.
    public convenience init(pem: String) throws(CryptoError) {
        let key = try OpenSSLKey.publicKey(pem: pem)
        guard key.kind == .ed25519 else { throw .invalidArgument("PEM public key is not an Ed25519 key") }
        self.init(key: key, raw: try key.rawPublicKey())
    }

    /// The key as SubjectPublicKeyInfo PEM.
    public func pemRepresentation() throws(CryptoError) -> String {
        try key.publicPEM()
    }

    /// True when `signature` is a valid Ed25519 signature of `message` by this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        signature.count == 64 && key.isValidSignature(signature, for: message, digest: .none)
    }
}
