import COpenSSL

/// scrypt (RFC 7914), the memory-hard password KDF, through OpenSSL's `EVP_PBE_scrypt`.
///
/// Pure CPU and memory: no blocking system calls, but the default login parameters (N=2^15, r=8) take ~100 ms of
/// one core and 32 MiB, so callers run it where that is acceptable (identity's handlers run on Swift's pool).
public enum Scrypt {
    /// The memory scrypt needs for these parameters, in bytes (128·r·(N+2) + 128·r·p).
    public static func memoryRequired(cost: UInt64, blockSize: UInt64, parallelism: UInt64) -> UInt64 {
        128 * blockSize * (cost + 2) + 128 * blockSize * parallelism
    }

    /// Derives `length` bytes from `password` and `salt` with cost N = `cost` (a power of two), block size r and
    /// parallelism p.
    ///
    /// Callers bound the parameters (a stored hash could name any); OpenSSL is allowed exactly the memory they need.
    public static func derive(
        password: [UInt8], salt: [UInt8], cost: UInt64, blockSize: UInt64, parallelism: UInt64, length: Int
    ) throws(CryptoError) -> [UInt8] {
        guard cost > 1, cost & (cost - 1) == 0, blockSize > 0, parallelism > 0, length > 0 else {
            throw .invalidArgument(
                "scrypt needs N a power of two above 1 and r, p and the length positive, got N=\(cost) r=\(blockSize) "
                    + "p=\(parallelism) length=\(length)")
        }
        var output = [UInt8](repeating: 0, count: length)
        // OpenSSL's default ceiling (32 MiB) is just below what N=2^15, r=8 needs; allow the exact need plus slack.
        let memory = memoryRequired(cost: cost, blockSize: blockSize, parallelism: parallelism) + 1024 * 1024
        let status = password.withUnsafeBufferPointer { passwordBuffer in
            salt.withUnsafeBufferPointer { saltBuffer in
                output.withUnsafeMutableBufferPointer { outputBuffer in
                    passwordBuffer.withMemoryRebound(to: CChar.self) { passwordChars in
                        EVP_PBE_scrypt(
                            passwordChars.baseAddress, passwordChars.count, saltBuffer.baseAddress, saltBuffer.count,
                            cost, blockSize, parallelism, memory, outputBuffer.baseAddress, outputBuffer.count)
                    }
                }
            }
        }
        guard status == 1 else { throw .internalFailure("EVP_PBE_scrypt failed: \(openSSLErrorDescription())") }
        return output
    }
}
