import COpenSSL

/// AES-256-GCM authenticated encryption (NIST SP 800-38D) over OpenSSL's EVP cipher interface.
///
/// Nonces are 96 bits and random unless the caller gives one (test vectors do). A random nonce per message keeps
/// the chance of a repeat negligible up to about 2^32 messages under one key (SP 800-38D §8.3); a key that would
/// seal more than that must be rotated first. The tag is the full 128 bits.
public enum AES256GCM {
    /// Bytes in a nonce.
    public static let nonceByteCount = 12
    /// Bytes in an authentication tag.
    public static let tagByteCount = 16

    /// A sealed message: the nonce it was sealed with, the ciphertext (as long as the plaintext) and the tag.
    public struct SealedBox: Sendable, Hashable {
        public var nonce: [UInt8]
        public var ciphertext: [UInt8]
        public var tag: [UInt8]

        /// Creates a box from its parts.
        public init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) {
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }

        /// `nonce ‖ ciphertext ‖ tag`, the form stored.
        public var combined: [UInt8] { nonce + ciphertext + tag }

        /// Splits `nonce ‖ ciphertext ‖ tag`; throws when it is too short to hold a nonce and a tag.
        public init(combined: some Collection<UInt8>) throws(CryptoError) {
            let bytes = Array(combined)
            guard bytes.count >= AES256GCM.nonceByteCount + AES256GCM.tagByteCount else {
                throw .sealedDataRejected(
                    "sealed data must be at least \(AES256GCM.nonceByteCount + AES256GCM.tagByteCount) bytes, "
                        + "got \(bytes.count)")
            }
            nonce = Array(bytes.prefix(AES256GCM.nonceByteCount))
            ciphertext = Array(bytes[AES256GCM.nonceByteCount..<(bytes.count - AES256GCM.tagByteCount)])
            tag = Array(bytes.suffix(AES256GCM.tagByteCount))
        }
    }

    /// Encrypts `plaintext` under `key` and authenticates it together with `associatedData` (not encrypted, not
    /// stored: the opener must present the same bytes).
    public static func seal(
        _ plaintext: [UInt8], using key: SymmetricKey, nonce givenNonce: [UInt8]? = nil,
        authenticating associatedData: [UInt8] = []
    ) throws(CryptoError) -> SealedBox {
        let nonce: [UInt8]
        if let givenNonce {
            nonce = givenNonce
        } else {
            nonce = try SecureRandom.bytes(count: nonceByteCount)
        }
        guard nonce.count == nonceByteCount else {
            throw .invalidArgument("an AES-GCM nonce must be \(nonceByteCount) bytes, got \(nonce.count)")
        }
        let context = try CipherContext()
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        let succeeded = key.withUnsafeBytes { keyBytes in
            guard EVP_EncryptInit_ex(context.pointer, EVP_aes_256_gcm(), nil, nil, nil) == 1,
                EVP_EncryptInit_ex(context.pointer, nil, nil, keyBytes.bytes, nonce) == 1
            else { return false }
            var written: Int32 = 0
            if !associatedData.isEmpty {
                guard
                    EVP_EncryptUpdate(context.pointer, nil, &written, associatedData, Int32(associatedData.count))
                        == 1
                else { return false }
            }
            if !plaintext.isEmpty {
                guard EVP_EncryptUpdate(context.pointer, &ciphertext, &written, plaintext, Int32(plaintext.count)) == 1,
                    written == plaintext.count
                else { return false }
            }
            var trailing = [UInt8](repeating: 0, count: 16)
            return EVP_EncryptFinal_ex(context.pointer, &trailing, &written) == 1 && written == 0
                && EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), &tag) == 1
        }
        guard succeeded else { throw .internalFailure("AES-256-GCM sealing failed: \(openSSLErrorDescription())") }
        return SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
    }

    /// Decrypts `box` under `key`, checking its tag over the ciphertext and `associatedData`.
    ///
    /// Throws `sealedDataRejected` when the tag does not match: the key is wrong, the associated data differs, or
    /// a byte was changed. Nothing of the plaintext is returned then.
    public static func open(
        _ box: SealedBox, using key: SymmetricKey, authenticating associatedData: [UInt8] = []
    ) throws(CryptoError) -> [UInt8] {
        guard box.nonce.count == nonceByteCount, box.tag.count == tagByteCount else {
            throw .sealedDataRejected(
                "an AES-GCM box needs a \(nonceByteCount)-byte nonce and a \(tagByteCount)-byte tag")
        }
        let context = try CipherContext()
        var plaintext = [UInt8](repeating: 0, count: box.ciphertext.count)
        var tag = box.tag
        let prepared = key.withUnsafeBytes { keyBytes in
            guard EVP_DecryptInit_ex(context.pointer, EVP_aes_256_gcm(), nil, nil, nil) == 1,
                EVP_DecryptInit_ex(context.pointer, nil, nil, keyBytes.bytes, box.nonce) == 1
            else { return false }
            var written: Int32 = 0
            if !associatedData.isEmpty {
                guard
                    EVP_DecryptUpdate(context.pointer, nil, &written, associatedData, Int32(associatedData.count))
                        == 1
                else { return false }
            }
            if !box.ciphertext.isEmpty {
                guard
                    EVP_DecryptUpdate(
                        context.pointer, &plaintext, &written, box.ciphertext, Int32(box.ciphertext.count)) == 1,
                    written == box.ciphertext.count
                else { return false }
            }
            return EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), &tag) == 1
        }
        guard prepared else { throw .internalFailure("AES-256-GCM opening failed: \(openSSLErrorDescription())") }
        var trailing = [UInt8](repeating: 0, count: 16)
        var written: Int32 = 0
        guard EVP_DecryptFinal_ex(context.pointer, &trailing, &written) == 1 else {
            clearOpenSSLErrors()
            // The plaintext was written before the tag was known to be wrong; don't leave it lying in memory.
            plaintext.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
            throw .sealedDataRejected(
                "sealed data did not authenticate (wrong key, other associated data, or altered bytes)")
        }
        return plaintext
    }
}

/// An `EVP_CIPHER_CTX`, freed with its owner.
private final class CipherContext {
    let pointer: OpaquePointer

    init() throws(CryptoError) {
        guard let pointer = EVP_CIPHER_CTX_new() else { throw .internalFailure("EVP_CIPHER_CTX_new failed") }
        self.pointer = pointer
    }

    deinit {
        EVP_CIPHER_CTX_free(pointer)
    }
}

extension UnsafeRawBufferPointer {
    /// The bytes as OpenSSL's `const unsigned char *`.
    fileprivate var bytes: UnsafePointer<UInt8>? { baseAddress?.assumingMemoryBound(to: UInt8.self) }
}
