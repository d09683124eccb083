import COpenSSL

/// Random bytes from OpenSSL's CSPRNG.
public enum SecureRandom {
    /// Returns `count` cryptographically secure random bytes.
    public static func bytes(count: Int) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        let succeeded = output.withUnsafeMutableBufferPointer { buffer in
            buffer.isEmpty || RAND_bytes(buffer.baseAddress, Int32(buffer.count)) == 1
        }
        guard succeeded else { throw .internalFailure("RAND_bytes failed: \(openSSLErrorDescription())") }
        return output
    }

    /// Fills `buffer` with cryptographically secure random bytes.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(CryptoError) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        guard RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1 else {
            throw .internalFailure("RAND_bytes failed: \(openSSLErrorDescription())")
        }
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
