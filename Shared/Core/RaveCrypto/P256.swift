import COpenSSL

/// An ECDSA private key on P-256: signs ES256 (APNs provider tokens; test identity providers).
///
/// Signatures come out in the JOSE form, r ‖ s as 32 bytes each (RFC 7518 §3.4), not OpenSSL's DER.
public final class P256PrivateKey: Sendable {
    private let key: OpenSSLKey

    private init(key: OpenSSLKey) {
        self.key = key
    }

    /// Generates a new key.
    public convenience init() throws(CryptoError) {
        self.init(key: try OpenSSLKey.generate(.ec))
    }

    /// Reads a PEM private key (PKCS#8, as Apple's `.p8` files are, or `EC PRIVATE KEY`); it must be on P-256.
    public convenience init(pem: String) throws(CryptoError) {
        let key = try OpenSSLKey.privateKey(pem: pem)
        guard key.kind == .ec, key.curveName == "prime256v1" else {
            throw .invalidArgument("PEM private key is not an EC P-256 key")
        }
        self.init(key: key)
    }

    /// The matching public key.
    public func publicKey() throws(CryptoError) -> P256PublicKey {
        try P256PublicKey(x: key.bigNumber("qx", width: 32), y: key.bigNumber("qy", width: 32))
    }

    /// The ES256 signature of `message`: SHA-256, ECDSA, r ‖ s (64 bytes).
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let der = try key.signature(for: message, digest: .sha256)
        guard let raw = rawSignature(fromDER: der) else {
            throw .internalFailure("OpenSSL returned an ECDSA signature that is not P-256")
        }
        return raw
    }
}

/// An ECDSA public key on P-256: verifies ES256 signatures.
public final class P256PublicKey: Sendable {
    private let key: OpenSSLKey

    /// The point's x coordinate, 32 bytes big-endian (a JWK's `x`).
    public let x: [UInt8]
    /// The point's y coordinate, 32 bytes big-endian (a JWK's `y`).
    public let y: [UInt8]

    /// A key from its coordinates; throws when they are not 32 bytes each or not a point on the curve.
    public init(x: [UInt8], y: [UInt8]) throws(CryptoError) {
        guard x.count == 32, y.count == 32 else {
            throw .invalidArgument("P-256 coordinates must be 32 bytes each, got \(x.count) and \(y.count)")
        }
        key = try OpenSSLKey.p256PublicKey(point: [0x04] + x + y)
        self.x = x
        self.y = y
    }

    /// True when `signature` (r ‖ s, 64 bytes) is a valid ES256 signature of `message` by this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let der = derSignature(fromRaw: signature) else { return false }
        return key.isValidSignature(der, for: message, digest: .sha256)
    }
}

// MARK: - Signature forms

/// JOSE's r ‖ s from the DER ECDSA-Sig-Value OpenSSL produces.
private func rawSignature(fromDER der: [UInt8]) -> [UInt8]? {
    let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
        var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
        return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
    }
    guard let parsed else { return nil }
    defer { ECDSA_SIG_free(parsed) }
    var raw = [UInt8](repeating: 0, count: 64)
    let written = raw.withUnsafeMutableBufferPointer { buffer in
        guard let r = ECDSA_SIG_get0_r(parsed), let s = ECDSA_SIG_get0_s(parsed), let base = buffer.baseAddress
        else { return false }
        return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
    }
    return written ? raw : nil
}

/// The DER ECDSA-Sig-Value OpenSSL verifies, from JOSE's r ‖ s.
private func derSignature(fromRaw raw: [UInt8]) -> [UInt8]? {
    guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
    defer { ECDSA_SIG_free(signature) }
    let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
    let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
    guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
        BN_free(r)
        BN_free(s)
        return nil
    }
    let length = i2d_ECDSA_SIG(signature, nil)
    guard length > 0 else { return nil }
    var der = [UInt8](repeating: 0, count: Int(length))
    let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor = buffer.baseAddress
        return i2d_ECDSA_SIG(signature, &cursor)
    }
    return written == length ? der : nil
}
