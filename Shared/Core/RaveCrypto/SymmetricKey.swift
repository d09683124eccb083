import COpenSSL

/// A 256-bit secret key for AES-256-GCM, held in memory this object owns and wipes when it is freed.
///
/// The bytes live in one allocation that never moves or gets copied (an array could be copied by the runtime, and
/// wiping one copy would leave the others), and `OPENSSL_cleanse` overwrites them in `deinit`.
public final class SymmetricKey: @unchecked Sendable {
    // @unchecked: the buffer is written once in init and only read afterwards, until deinit wipes it.
    private let storage: UnsafeMutableRawBufferPointer

    /// Bytes in a key.
    public static let byteCount = 32

    /// A key holding `bytes`, which must be 32 bytes.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .invalidArgument("an AES-256 key must be \(Self.byteCount) bytes, got \(bytes.count)")
        }
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.byteCount, alignment: 16)
        bytes.withUnsafeBytes { storage.copyMemory(from: $0) }
    }

    /// A new random key.
    public init() throws(CryptoError) {
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.byteCount, alignment: 16)
        do {
            try SecureRandom.fill(storage)
        } catch {
            storage.deallocate()
            throw error
        }
    }

    deinit {
        OPENSSL_cleanse(storage.baseAddress, storage.count)
        storage.deallocate()
    }

    /// Runs `body` with the key's bytes; they must not escape it.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(storage))
    }
}
