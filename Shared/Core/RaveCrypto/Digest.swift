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
                fetchedSHA256, nil) == 1
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
        guard let template = hmacSHA256Template else {
            let length = hmac(EVP_sha256(), key: key, message: message, into: output)
            precondition(length == 32, "OpenSSL's HMAC failed, which only happens when out of memory")
            return
        }
        let context = EVP_MAC_CTX_dup(template)
        defer { EVP_MAC_CTX_free(context) }
        var length = 0
        let succeeded = withKeyBytes(key) { keyBytes in
            context != nil && EVP_MAC_init(context, keyBytes, key.count, nil) == 1
                && EVP_MAC_update(context, message.bytes, message.count) == 1
                && EVP_MAC_final(context, output.mutableBytes, &length, output.count) == 1
        }
        precondition(succeeded && length == 32, "OpenSSL's HMAC failed, which only happens when out of memory")
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
        let result = withKeyBytes(key) { keyBytes in
            HMAC(digest, keyBytes, Int32(key.count), message.bytes, message.count, output.mutableBytes, &length)
        }
        return result == nil ? 0 : Int(length)
    }

    /// `key`'s address, never NULL: OpenSSL reads a NULL key as "no key given" rather than as an empty one.
    private static func withKeyBytes<Result>(
        _ key: UnsafeRawBufferPointer, _ body: (UnsafePointer<UInt8>) -> Result
    ) -> Result {
        if let bytes = key.bytes { return body(bytes) }
        var empty: UInt8 = 0
        return withUnsafePointer(to: &empty) { body($0) }
    }
}

// MARK: - Algorithms fetched once

// EVP_sha256() makes every EVP_Digest look its implementation up again: an allocation and about half the time of a
// short digest. Fetched objects are immutable and made to be shared between threads; these live as long as the process.
nonisolated(unsafe) private let fetchedSHA256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil) ?? EVP_sha256()

// An HMAC context with SHA-256 chosen and no key, copied (never used itself) for each MAC: the one-shot HMAC() looks
// the MAC and the digest up by name every time (two more allocations, a quarter more time). EVP_MAC_CTX_dup takes a
// const source, so copying it from several threads at once only reads it.
nonisolated(unsafe) private let hmacSHA256Template: OpaquePointer? = {
    guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else { return nil }
    defer { EVP_MAC_free(mac) }
    guard let context = EVP_MAC_CTX_new(mac) else { return nil }
    var digestName = Array("SHA256".utf8CString)
    let configured = digestName.withUnsafeMutableBufferPointer { name in
        "digest".withCString { parameter in
            var parameters = [
                OSSL_PARAM_construct_utf8_string(parameter, name.baseAddress, 0), OSSL_PARAM_construct_end(),
            ]
            return EVP_MAC_CTX_set_params(context, &parameters) == 1
        }
    }
    guard configured else {
        EVP_MAC_CTX_free(context)
        return nil
    }
    return context
}()

extension UnsafeRawBufferPointer {
    fileprivate var bytes: UnsafePointer<UInt8>? { baseAddress?.assumingMemoryBound(to: UInt8.self) }
}

extension UnsafeMutableRawBufferPointer {
    fileprivate var mutableBytes: UnsafeMutablePointer<UInt8>? { baseAddress?.assumingMemoryBound(to: UInt8.self) }
}
