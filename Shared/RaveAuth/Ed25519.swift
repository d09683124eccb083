import COpenSSL

// Ed25519 keys over OpenSSL's EVP API. The only file that touches an Ed25519 EVP_PKEY: everything else sees
// these two classes.

/// An Ed25519 private key: signs access tokens.
///
/// Generation, PEM (PKCS#8) export and import; the service stores the PEM in its database so replicas share keys.
public final class Ed25519PrivateKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is immutable after init, and OpenSSL allows concurrent signing with one key.
    private let key: OpaquePointer

    private init(key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Generates a new random key.
    public convenience init() throws(CryptoError) {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else {
            throw .internalFailure("EVP_PKEY_CTX_new_id(ED25519) failed: \(openSSLErrorDescription())")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_keygen(context, &generated) == 1, let generated else {
            throw .internalFailure("Ed25519 key generation failed: \(openSSLErrorDescription())")
        }
        self.init(key: generated)
    }

    /// Reads a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`); it must be an Ed25519 key.
    public convenience init(pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else {
            throw .invalidArgument("not a PEM private key: \(openSSLErrorDescription())")
        }
        guard EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 else {
            EVP_PKEY_free(key)
            throw .invalidArgument("PEM private key is not an Ed25519 key")
        }
        self.init(key: key)
    }

    /// The key as PKCS#8 PEM.
    public func pemRepresentation() throws(CryptoError) -> String {
        try writePEM(name: "private key") { bio in PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) }
    }

    /// The matching public key.
    public func publicKey() throws(CryptoError) -> Ed25519PublicKey {
        try Ed25519PublicKey(rawRepresentation: rawPublicKey(key))
    }

    /// Signs `message`, returning the 64-byte signature.
    ///
    /// Ed25519 hashes internally, so there is no digest to choose.
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .internalFailure("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = signature.count
        let status = message.withUnsafeBufferPointer { messageBuffer in
            signature.withUnsafeMutableBufferPointer { signatureBuffer in
                guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else { return Int32(0) }
                return EVP_DigestSign(
                    context, signatureBuffer.baseAddress, &length, messageBuffer.baseAddress, messageBuffer.count)
            }
        }
        guard status == 1, length == 64 else {
            throw .internalFailure("Ed25519 signing failed: \(openSSLErrorDescription())")
        }
        return signature
    }
}

/// An Ed25519 public key: verifies access tokens.
///
/// Served to the gateway as raw 32 bytes (JWK `x`).
public final class Ed25519PublicKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is immutable after init, and OpenSSL allows concurrent verification with one key.
    private let key: OpaquePointer

    /// The raw 32-byte public key (RFC 8032), as carried in a JWK's `x`.
    public let rawRepresentation: [UInt8]

    private init(key: OpaquePointer, raw: [UInt8]) {
        self.key = key
        self.rawRepresentation = raw
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Creates a key from its raw 32 bytes.
    public convenience init(rawRepresentation raw: [UInt8]) throws(CryptoError) {
        guard raw.count == 32 else {
            throw .invalidArgument("Ed25519 public key must be 32 bytes, got \(raw.count)")
        }
        let key = raw.withUnsafeBufferPointer { buffer in
            EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, buffer.baseAddress, buffer.count)
        }
        guard let key else { throw .invalidArgument("invalid Ed25519 public key: \(openSSLErrorDescription())") }
        self.init(key: key, raw: raw)
    }

    /// Reads a PEM public key (`-----BEGIN PUBLIC KEY-----`); it must be an Ed25519 key.
    public convenience init(pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let key else { throw .invalidArgument("not a PEM public key: \(openSSLErrorDescription())") }
        guard EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 else {
            EVP_PKEY_free(key)
            throw .invalidArgument("PEM public key is not an Ed25519 key")
        }
        do {
            self.init(key: key, raw: try rawPublicKey(key))
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
    }

    /// The key as SubjectPublicKeyInfo PEM.
    public func pemRepresentation() throws(CryptoError) -> String {
        try writePEM(name: "public key") { bio in PEM_write_bio_PUBKEY(bio, key) }
    }

    /// True when `signature` is a valid Ed25519 signature of `message` by this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == 64, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        let status = message.withUnsafeBufferPointer { messageBuffer in
            signature.withUnsafeBufferPointer { signatureBuffer in
                guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return Int32(0) }
                return EVP_DigestVerify(
                    context, signatureBuffer.baseAddress, signatureBuffer.count, messageBuffer.baseAddress,
                    messageBuffer.count)
            }
        }
        // A failed verification leaves an entry on this thread's error queue; don't let it leak into later calls.
        if status != 1 { ERR_clear_error() }
        return status == 1
    }
}

// MARK: - Helpers

private func rawPublicKey(_ key: OpaquePointer) throws(CryptoError) -> [UInt8] {
    var raw = [UInt8](repeating: 0, count: 32)
    var length = raw.count
    guard EVP_PKEY_get_raw_public_key(key, &raw, &length) == 1, length == 32 else {
        throw .internalFailure("EVP_PKEY_get_raw_public_key failed: \(openSSLErrorDescription())")
    }
    return raw
}

private func writePEM(name: String, _ write: (OpaquePointer) -> Int32) throws(CryptoError) -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { throw .internalFailure("BIO_new failed") }
    defer { BIO_free(bio) }
    guard write(bio) == 1 else { throw .internalFailure("writing \(name) PEM failed: \(openSSLErrorDescription())") }
    var pem = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
    let read = pem.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
    guard read == pem.count else { throw .internalFailure("reading \(name) PEM from memory failed") }
    return String(decoding: pem, as: UTF8.self)
}
