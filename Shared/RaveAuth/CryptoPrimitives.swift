import COpenSSL

// Small OpenSSL-backed building blocks shared by passwords, tokens, TOTP and backup codes.

/// Random bytes from OpenSSL's CSPRNG.
public enum SecureRandom {
    /// Returns `count` cryptographically secure random bytes.
    public static func bytes(count: Int) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return output }
        let status = output.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard status == 1 else { throw .internalFailure("RAND_bytes failed: \(openSSLErrorDescription())") }
        return output
    }
}

/// Message digests and MACs.
public enum Digest {
    /// SHA-256 of `bytes` (32 bytes).
    public static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        let input = Array(bytes)
        input.withUnsafeBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                _ = SHA256(inputBuffer.baseAddress, inputBuffer.count, outputBuffer.baseAddress)
            }
        }
        return output
    }

    /// SHA-256 of a string's UTF-8 bytes.
    public static func sha256(_ text: String) -> [UInt8] { sha256(Array(text.utf8)) }

    /// HMAC-SHA1 (20 bytes): what RFC 4226/6238 one-time codes are defined with.
    public static func hmacSHA1(key: [UInt8], message: [UInt8]) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBufferPointer { keyBuffer in
            message.withUnsafeBufferPointer { messageBuffer in
                output.withUnsafeMutableBufferPointer { outputBuffer in
                    HMAC(
                        EVP_sha1(), keyBuffer.baseAddress, Int32(keyBuffer.count), messageBuffer.baseAddress,
                        messageBuffer.count, outputBuffer.baseAddress, &length)
                }
            }
        }
        guard result != nil else { throw .internalFailure("HMAC-SHA1 failed: \(openSSLErrorDescription())") }
        return Array(output.prefix(Int(length)))
    }
}

/// Comparisons whose duration does not depend on where the inputs differ.
public enum ConstantTime {
    /// True when both byte sequences are equal; the time taken depends only on their lengths.
    ///
    /// Lengths are not secret here (hashes and codes have fixed sizes), so unequal lengths return early.
    public static func equals(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        guard left.count == right.count else { return false }
        guard !left.isEmpty else { return true }
        return left.withUnsafeBytes { leftBuffer in
            right.withUnsafeBytes { rightBuffer in
                CRYPTO_memcmp(leftBuffer.baseAddress, rightBuffer.baseAddress, leftBuffer.count) == 0
            }
        }
    }
}

/// Opaque bearer secrets (refresh tokens, challenge ids): random, URL-safe, stored only as a hash.
public enum OpaqueToken {
    /// A new token of `byteCount` random bytes (256 bits by default), base64url encoded.
    public static func generate(byteCount: Int = 32) throws(CryptoError) -> String {
        Base64URL.encode(try SecureRandom.bytes(count: byteCount))
    }

    /// The value to store and look up: SHA-256 of the token, enough for a high-entropy secret (no salt needed).
    public static func hash(_ token: String) -> [UInt8] { Digest.sha256(token) }
}

/// Drains OpenSSL's thread-local error queue into one line, so failures say what OpenSSL objected to.
public func openSSLErrorDescription() -> String {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return messages.isEmpty ? "no OpenSSL error recorded" : messages.joined(separator: "; ")
}
