import COpenSSL

// The one owner of EVP_PKEYs in RaveCrypto: generation, PEM, raw and parameter import/export, signing and
// verification. The typed keys (Ed25519, P256, RSA) wrap an `OpenSSLKey` and add what is particular to them.

/// An OpenSSL key pair or public key, freed with this object.
final class OpenSSLKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is immutable after init, and OpenSSL allows concurrent signing and verification with
    // one key.
    private let key: OpaquePointer

    /// The algorithms RaveCrypto offers keys for.
    enum Kind: Sendable {
        case ed25519
        case ec
        case rsa

        var name: String {
            switch self {
            case .ed25519: "Ed25519"
            case .ec: "EC"
            case .rsa: "RSA"
            }
        }
    }

    /// How a signature's message is digested: Ed25519 hashes internally, ECDSA and RSA here use SHA-256.
    enum MessageDigest: Sendable {
        case none
        case sha256
    }

    private init(owning key: OpaquePointer) {
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The key's algorithm; nil for one RaveCrypto has no use for.
    var kind: Kind? {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_ED25519: .ed25519
        case EVP_PKEY_EC: .ec
        case EVP_PKEY_RSA: .rsa
        default: nil
        }
    }

    /// The key's size in bits (the modulus for RSA, the field for elliptic curves).
    var bitCount: Int { Int(EVP_PKEY_get_bits(key)) }

    /// The curve of an elliptic-curve key, by OpenSSL's name ("prime256v1"); nil for other keys.
    var curveName: String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1 else {
            clearOpenSSLErrors()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: - Creating keys

    /// Generates a new key pair: Ed25519, an elliptic-curve key on P-256, or RSA of `rsaBits`.
    static func generate(_ kind: Kind, rsaBits: Int32 = 2048) throws(CryptoError) -> OpenSSLKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, kind.name, nil) else {
            throw .internalFailure("EVP_PKEY_CTX_new_from_name(\(kind.name)) failed: \(openSSLErrorDescription())")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        var ready = EVP_PKEY_keygen_init(context) == 1
        switch kind {
        case .ed25519: break
        case .ec: ready = ready && EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1
        case .rsa: ready = ready && EVP_PKEY_CTX_set_rsa_keygen_bits(context, rsaBits) == 1
        }
        guard ready, EVP_PKEY_generate(context, &generated) == 1, let generated else {
            throw .internalFailure("\(kind.name) key generation failed: \(openSSLErrorDescription())")
        }
        return OpenSSLKey(owning: generated)
    }

    /// Reads a PEM private key (PKCS#8 `PRIVATE KEY`, or the traditional `EC PRIVATE KEY` / `RSA PRIVATE KEY`).
    static func privateKey(pem: String) throws(CryptoError) -> OpenSSLKey {
        let key: OpaquePointer? = readPEM(pem) { bio in PEM_read_bio_PrivateKey(bio, nil, nil, nil) }
        guard let key else { throw .invalidArgument("not a PEM private key: \(openSSLErrorDescription())") }
        return OpenSSLKey(owning: key)
    }

    /// Reads a PEM public key (SubjectPublicKeyInfo, `PUBLIC KEY`).
    static func publicKey(pem: String) throws(CryptoError) -> OpenSSLKey {
        let key: OpaquePointer? = readPEM(pem) { bio in PEM_read_bio_PUBKEY(bio, nil, nil, nil) }
        guard let key else { throw .invalidArgument("not a PEM public key: \(openSSLErrorDescription())") }
        return OpenSSLKey(owning: key)
    }

    /// An Ed25519 private key from its 32-byte seed (RFC 8032 §5.1.5).
    static func ed25519PrivateKey(raw: [UInt8]) throws(CryptoError) -> OpenSSLKey {
        guard raw.count == 32 else { throw .invalidArgument("Ed25519 private key must be 32 bytes, got \(raw.count)") }
        let key = raw.withUnsafeBufferPointer { buffer in
            EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, buffer.baseAddress, buffer.count)
        }
        guard let key else { throw .invalidArgument("invalid Ed25519 private key: \(openSSLErrorDescription())") }
        return OpenSSLKey(owning: key)
    }

    /// An Ed25519 public key from its 32 bytes.
    static func ed25519PublicKey(raw: [UInt8]) throws(CryptoError) -> OpenSSLKey {
        guard raw.count == 32 else { throw .invalidArgument("Ed25519 public key must be 32 bytes, got \(raw.count)") }
        let key = raw.withUnsafeBufferPointer { buffer in
            EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, buffer.baseAddress, buffer.count)
        }
        guard let key else { throw .invalidArgument("invalid Ed25519 public key: \(openSSLErrorDescription())") }
        return OpenSSLKey(owning: key)
    }

    /// An RSA public key from its big-endian modulus and exponent.
    static func rsaPublicKey(modulus: [UInt8], exponent: [UInt8]) throws(CryptoError) -> OpenSSLKey {
        // OSSL_PARAM_construct_BN takes native-endian magnitudes; callers hold big-endian ones.
        var modulusNative = Array(modulus.reversed())
        var exponentNative = Array(exponent.reversed())
        let key: OpaquePointer? = "n".withCString { nName in
            "e".withCString { eName in
                modulusNative.withUnsafeMutableBytes { modulusBuffer in
                    exponentNative.withUnsafeMutableBytes { exponentBuffer in
                        var parameters = [
                            OSSL_PARAM_construct_BN(nName, modulusBuffer.baseAddress, modulusBuffer.count),
                            OSSL_PARAM_construct_BN(eName, exponentBuffer.baseAddress, exponentBuffer.count),
                            OSSL_PARAM_construct_end(),
                        ]
                        return publicKeyFromParameters(typeName: "RSA", &parameters)
                    }
                }
            }
        }
        guard let key else { throw .invalidArgument("not a valid RSA public key: \(openSSLErrorDescription())") }
        return OpenSSLKey(owning: key)
    }

    /// A P-256 public key from its uncompressed point (`04 ‖ x ‖ y`); OpenSSL checks that it is on the curve.
    static func p256PublicKey(point: [UInt8]) throws(CryptoError) -> OpenSSLKey {
        var curveName = Array("prime256v1".utf8CString)
        var pointBytes = point
        let key: OpaquePointer? = "group".withCString { groupName in
            "pub".withCString { publicName in
                curveName.withUnsafeMutableBufferPointer { curveBuffer in
                    pointBytes.withUnsafeMutableBytes { pointBuffer in
                        var parameters = [
                            OSSL_PARAM_construct_utf8_string(groupName, curveBuffer.baseAddress, 0),
                            OSSL_PARAM_construct_octet_string(publicName, pointBuffer.baseAddress, pointBuffer.count),
                            OSSL_PARAM_construct_end(),
                        ]
                        return publicKeyFromParameters(typeName: "EC", &parameters)
                    }
                }
            }
        }
        guard let key else { throw .invalidArgument("not a valid P-256 public key: \(openSSLErrorDescription())") }
        return OpenSSLKey(owning: key)
    }

    /// The public half of this key as a key of its own.
    func publicOnly() throws(CryptoError) -> OpenSSLKey {
        try Self.publicKey(pem: publicPEM())
    }

    // MARK: - Exporting

    /// The private key as PKCS#8 PEM.
    func privatePEM() throws(CryptoError) -> String {
        try writePEM(name: "private key") { bio in PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) }
    }

    /// The public key as SubjectPublicKeyInfo PEM.
    func publicPEM() throws(CryptoError) -> String {
        try writePEM(name: "public key") { bio in PEM_write_bio_PUBKEY(bio, key) }
    }

    /// The raw public key of an Ed25519 key (32 bytes).
    func rawPublicKey() throws(CryptoError) -> [UInt8] {
        var raw = [UInt8](repeating: 0, count: 32)
        var length = raw.count
        guard EVP_PKEY_get_raw_public_key(key, &raw, &length) == 1, length == 32 else {
            throw .internalFailure("EVP_PKEY_get_raw_public_key failed: \(openSSLErrorDescription())")
        }
        return raw
    }

    /// The raw private key (seed) of an Ed25519 key (32 bytes).
    func rawPrivateKey() throws(CryptoError) -> [UInt8] {
        var raw = [UInt8](repeating: 0, count: 32)
        var length = raw.count
        guard EVP_PKEY_get_raw_private_key(key, &raw, &length) == 1, length == 32 else {
            throw .internalFailure("EVP_PKEY_get_raw_private_key failed: \(openSSLErrorDescription())")
        }
        return raw
    }

    /// A big-number parameter (`n`, `e` of RSA; `qx`, `qy` of EC) as big-endian bytes, left-padded to `width`
    /// when one is given, else in its minimal length.
    func bigNumber(_ name: String, width: Int? = nil) throws(CryptoError) -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, name, &number) == 1, let value = number else {
            throw .internalFailure("cannot read key parameter \(name): \(openSSLErrorDescription())")
        }
        defer { BN_free(value) }
        let length = Int32(width ?? Int(BN_num_bits(value) + 7) / 8)
        var bytes = [UInt8](repeating: 0, count: Int(length))
        guard BN_bn2binpad(value, &bytes, length) == length else {
            throw .internalFailure("key parameter \(name) does not fit \(length) bytes")
        }
        return bytes
    }

    // MARK: - Signatures

    /// Signs `message`; ECDSA signatures come out in OpenSSL's DER form.
    func signature(for message: [UInt8], digest: MessageDigest) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .internalFailure("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest.evp, nil, key) == 1 else {
            throw .internalFailure("cannot start a signature: \(openSSLErrorDescription())")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw .internalFailure("cannot size a signature: \(openSSLErrorDescription())")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw .internalFailure("signing failed: \(openSSLErrorDescription())")
        }
        signature.removeLast(signature.count - length)
        return signature
    }

    /// A signing context for this key, prepared once and copied for each signature (`PreparedSignature`).
    func preparedSignature(digest: MessageDigest, signatureLength: Int) throws(CryptoError) -> PreparedSignature {
        guard let context = EVP_MD_CTX_new() else { throw .internalFailure("EVP_MD_CTX_new failed") }
        guard EVP_DigestSignInit(context, nil, digest.evp, nil, key) == 1 else {
            EVP_MD_CTX_free(context)
            throw .internalFailure("cannot start a signature: \(openSSLErrorDescription())")
        }
        return PreparedSignature(owning: context, key: self, signatureLength: signatureLength)
    }

    /// True when `signature` (DER for ECDSA) is valid for `message` under this key.
    func isValidSignature(_ signature: [UInt8], for message: [UInt8], digest: MessageDigest) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        let status = message.withUnsafeBufferPointer { messageBuffer in
            signature.withUnsafeBufferPointer { signatureBuffer in
                guard EVP_DigestVerifyInit(context, nil, digest.evp, nil, key) == 1 else { return Int32(0) }
                return EVP_DigestVerify(
                    context, signatureBuffer.baseAddress, signatureBuffer.count, messageBuffer.baseAddress,
                    messageBuffer.count)
            }
        }
        if status != 1 { clearOpenSSLErrors() }
        return status == 1
    }
}

/// A signing context started once for a key, copied for each signature of a fixed length (Ed25519's 64 bytes).
///
/// Starting a context fetches the signature algorithm by name and allocates the key's operation context, about 2.5 %
/// of an Ed25519 signature's instructions; a copy of a started context skips the fetch, and a fixed length skips
/// the call that asks for it. The started context is only ever copied, never used: EVP_MD_CTX_copy_ex only reads its
/// source, so threads may copy it at once.
final class PreparedSignature: @unchecked Sendable {
    // @unchecked: `started` never changes after init, and copying it only reads it.
    private let started: OpaquePointer
    /// Owned here too: the context refers to the key, so the key must outlive it.
    private let key: OpenSSLKey
    /// The length of every signature this context makes.
    let signatureLength: Int

    fileprivate init(owning started: OpaquePointer, key: OpenSSLKey, signatureLength: Int) {
        self.started = started
        self.key = key
        self.signatureLength = signatureLength
    }

    deinit {
        EVP_MD_CTX_free(started)
    }

    /// Signs `message`, returning the `signatureLength`-byte signature.
    func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .internalFailure("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_MD_CTX_copy_ex(context, started) == 1 else {
            throw .internalFailure("cannot copy a started signature: \(openSSLErrorDescription())")
        }
        var signature = [UInt8](repeating: 0, count: signatureLength)
        var length = signatureLength
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1, length == signatureLength
        else { throw .internalFailure("signing failed: \(openSSLErrorDescription())") }
        return signature
    }
}

extension OpenSSLKey.MessageDigest {
    fileprivate var evp: OpaquePointer? {
        switch self {
        case .none: nil
        case .sha256: EVP_sha256()
        }
    }
}

// MARK: - Helpers

// EVP_PKEY_PUBLIC_KEY is a compound macro Swift cannot import; these are its parts.
private let publicKeySelection = Int32(
    OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)

private func publicKeyFromParameters(typeName: String, _ parameters: inout [OSSL_PARAM]) -> OpaquePointer? {
    guard let context = EVP_PKEY_CTX_new_from_name(nil, typeName, nil) else { return nil }
    defer { EVP_PKEY_CTX_free(context) }
    var key: OpaquePointer?
    guard EVP_PKEY_fromdata_init(context) == 1,
        parameters.withUnsafeMutableBufferPointer({
            EVP_PKEY_fromdata(context, &key, publicKeySelection, $0.baseAddress)
        }) == 1
    else { return nil }
    return key
}

private func readPEM(_ pem: String, _ read: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
    let bytes = Array(pem.utf8)
    return bytes.withUnsafeBytes { buffer in
        guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
        defer { BIO_free(bio) }
        return read(bio)
    }
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
