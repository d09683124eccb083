/// An RSA private key: signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256), as Google's service-account assertions and
/// test identity providers need.
public final class RSAPrivateKey: Sendable {
    private let key: OpenSSLKey

    private init(key: OpenSSLKey) {
        self.key = key
    }

    /// Generates a new key with a modulus of `bits` bits (2048…8192).
    public convenience init(bits: Int = 2048) throws(CryptoError) {
        guard (2048...8192).contains(bits) else {
            throw .invalidArgument("RSA keys must be 2048…8192 bits, got \(bits)")
        }
        self.init(key: try OpenSSLKey.generate(.rsa, rsaBits: Int32(bits)))
    }

    /// Reads a PEM private key (PKCS#8 or `RSA PRIVATE KEY`); it must be an RSA key.
    public convenience init(pem: String) throws(CryptoError) {
        let key = try OpenSSLKey.privateKey(pem: pem)
        guard key.kind == .rsa else { throw .invalidArgument("PEM private key is not an RSA key") }
        self.init(key: key)
    }

    /// The matching public key.
    public func publicKey() throws(CryptoError) -> RSAPublicKey {
        try RSAPublicKey(modulus: key.bigNumber("n"), exponent: key.bigNumber("e"))
    }

    /// The RS256 signature of `message` (as long as the modulus).
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try key.signature(for: message, digest: .sha256)
    }
}

/// An RSA public key: verifies RS256 signatures (OIDC ID tokens of Google, Apple, Facebook).
public final class RSAPublicKey: Sendable {
    private let key: OpenSSLKey

    /// The modulus, big-endian without leading zeros (a JWK's `n`).
    public let modulus: [UInt8]
    /// The public exponent, big-endian without leading zeros (a JWK's `e`).
    public let exponent: [UInt8]

    /// A key from its big-endian modulus and exponent, as a JWK carries them.
    public init(modulus: [UInt8], exponent: [UInt8]) throws(CryptoError) {
        let modulus = Array(modulus.drop { $0 == 0 })
        let exponent = Array(exponent.drop { $0 == 0 })
        guard !modulus.isEmpty, !exponent.isEmpty else {
            throw .invalidArgument("RSA modulus and exponent must be non-zero")
        }
        key = try OpenSSLKey.rsaPublicKey(modulus: modulus, exponent: exponent)
        self.modulus = modulus
        self.exponent = exponent
    }

    /// The modulus's length in bits.
    public var bitCount: Int { key.bitCount }

    /// True when `signature` is a valid RS256 signature of `message` by this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        key.isValidSignature(signature, for: message, digest: .sha256)
    }
}
