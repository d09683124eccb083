import COpenSSL

/// Message digests and MACs over OpenSSL's EVP interface.
///
/// None of these throw: OpenSSL fails here only when it cannot allocate, and then the process traps, as Swift does
/// when it runs out of memory. The `into:` forms write into the caller's buffer and allocate nothing in Swift, for
/// paths that hash on every call (the wallet hashes each bet's request and draws each outcome from an HMAC); the
/// array forms allocate exactly their 32-byte result.
public enum Digest {
    /// Bytes in a SHA-256 digest, and so in an HMAC-SHA256.
    public static let sha256ByteCount = 32
    /// Bytes in an HMAC-SHA1.
    public static let sha1ByteCount = 20

    // MARK: - SHA-256

    /// SHA-256 of `bytes`, written into the first 32 bytes of `output`.
    public static func sha256(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count >= sha256ByteCount, "a SHA-256 digest needs 32 bytes, got \(output.count)")
        var length: UInt32 = 0
        let succeeded =
            EVP_Digest(
                bytes.baseAddress, bytes.count, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length,
                EVP_sha256(), nil) == 1
        precondition(succeeded && length == 32, "OpenSSL's SHA-256 failed, which only happens when out of memory")
    }

    /// SHA-256 of `bytes` (32 bytes).
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: sha256ByteCount) { output, count in
            bytes.withUnsafeBytes { sha256($0, into: UnsafeMutableRawBufferPointer(output)) }
            count = sha256ByteCount
        }
    }

    /// SHA-256 of a string's UTF-8 bytes (32 bytes), read in place.
    public static func sha256(_ text: String) -> [UInt8] {
        var text = text
        return [UInt8](unsafeUninitializedCapacity: sha256ByteCount) { output, count in
            text.withUTF8 { sha256(UnsafeRawBufferPointer($0), into: UnsafeMutableRawBufferPointer(output)) }
            count = sha256ByteCount
        }
    }

    // MARK: - HMAC

    /// HMAC-SHA256 of `message` under `key`, written into the first 32 bytes of `output`.
    public static func hmacSHA256(
        key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) {
        precondition(output.count >= sha256ByteCount, "an HMAC-SHA256 needs 32 bytes, got \(output.count)")
        let length = hmac(EVP_sha256(), key: key, message: message, into: output)
        precondition(length == 32, "OpenSSL's HMAC failed, which only happens when out of memory")
    }

    /// HMAC-SHA256 of `message` under `key` (32 bytes).
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: sha256ByteCount) { output, count in
            key.withUnsafeBytes { key in
                message.withUnsafeBytes { message in
                    hmacSHA256(key: key, message: message, into: UnsafeMutableRawBufferPointer(output))
                }
            }
            count = sha256ByteCount
        }
    }

    /// HMAC-SHA1 (20 bytes): what RFC 4226/6238 one-time codes are defined with.
    public static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Int(EVP_MAX_MD_SIZE)) { output, count in
            let length = key.withUnsafeBytes { key in
                message.withUnsafeBytes { message in
                    hmac(EVP_sha1(), key: key, message: message, into: UnsafeMutableRawBufferPointer(output))
                }
            }
            precondition(length == sha1ByteCount, "OpenSSL's HMAC failed, which only happens when out of memory")
            count = length
        }
    }

    /// The one-shot HMAC; returns the MAC's length, 0 when OpenSSL failed.
    private static func hmac(
        _ digest: OpaquePointer?, key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) -> Int {
        var length: UInt32 = 0
        // OpenSSL reads a NULL key as "no key given" rather than as an empty one; any address will do for zero bytes.
        var empty: UInt8 = 0
        let result = withUnsafeMutablePointer(to: &empty) { emptyKey in
            HMAC(
                digest, key.baseAddress ?? UnsafeRawPointer(emptyKey), Int32(key.count),
                message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        }
        return result == nil ? 0 : Int(length)
    }
}
