import COpenSSL

/// The OpenSSL primitives the wallet needs; OpenSSL's types stay in this file.
enum Crypto {
    /// SHA-256 of `bytes`.
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        // Written straight into the result (SHA-256 writes exactly 32 bytes): every bet hashes its request.
        [UInt8](unsafeUninitializedCapacity: 32) { digest, count in
            var length: UInt32 = 0
            let succeeded = bytes.withUnsafeBytes { raw in
                EVP_Digest(raw.baseAddress, raw.count, digest.baseAddress, &length, EVP_sha256(), nil) == 1
            }
            precondition(
                succeeded && length == 32, "OpenSSL's SHA-256 failed, which only happens when out of memory")
            count = 32
        }
    }

    /// HMAC-SHA256 of `message` under `key`.
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { digest, count in
            var length: UInt32 = 0
            let result = key.withUnsafeBytes { keyBytes in
                message.withUnsafeBytes { messageBytes in
                    HMAC(
                        EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count),
                        messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count,
                        digest.baseAddress, &length)
                }
            }
            precondition(
                result != nil && length == 32, "OpenSSL's HMAC failed, which only happens when out of memory")
            count = 32
        }
    }

    /// `count` bytes from OpenSSL's CSPRNG.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let succeeded = bytes.withUnsafeMutableBytes { raw in
            RAND_bytes(raw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1
        }
        // Without entropy there is no fair seed to hand out; continuing would be worse than stopping.
        precondition(succeeded, "OpenSSL's RAND_bytes failed")
        return bytes
    }

    static func hex(_ bytes: [UInt8]) -> String {
        // Written in place: every stored bet result travels as hex, so a per-digit append loop showed in profiles.
        String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            for (index, byte) in bytes.enumerated() {
                text[index * 2] = hexDigit(byte >> 4)
                text[index * 2 + 1] = hexDigit(byte & 0xf)
            }
            return bytes.count * 2
        }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}

/// Provably fair randomness: a deterministic, unbiased stream of numbers from
/// HMAC-SHA256(server seed, "client seed:nonce"), extended with ":round" blocks when one digest runs out.
struct FairRandom {
    let serverSeed: [UInt8]
    let clientSeed: String
    let nonce: Int64
    private var block: [UInt8]
    private var offset = 0
    private var round = 0

    init(serverSeed: [UInt8], clientSeed: String, nonce: Int64) {
        self.serverSeed = serverSeed
        self.clientSeed = clientSeed
        self.nonce = nonce
        block = Crypto.hmacSHA256(key: serverSeed, message: Self.message(clientSeed, nonce, round: nil))
    }

    /// "client seed:nonce", or "client seed:nonce:round" for the blocks after the first, as UTF-8 bytes, in one
    /// buffer (string interpolation built the text and then copied it).
    static func message(_ clientSeed: String, _ nonce: Int64, round: Int?) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(clientSeed.utf8.count + 48)
        bytes.append(contentsOf: clientSeed.utf8)
        bytes.append(UInt8(ascii: ":"))
        bytes.append(contentsOf: String(nonce).utf8)
        if let round {
            bytes.append(UInt8(ascii: ":"))
            bytes.append(contentsOf: String(round).utf8)
        }
        return bytes
    }

    /// A uniform integer in 0..<bound, by rejection sampling of 32-bit words so no value is favoured.
    mutating func next(below bound: Int) -> Int {
        precondition(bound > 0 && bound <= Int(UInt32.max), "bound must be 1…2^32-1")
        let range = UInt64(bound)
        // The largest multiple of `bound` below 2^32; words at or above it are rejected.
        let limit = (UInt64(1) << 32) / range * range
        while true {
            let word = UInt64(nextWord())
            if word < limit { return Int(word % range) }
        }
    }

    private mutating func nextWord() -> UInt32 {
        if offset + 4 > block.count {
            round += 1
            block = Crypto.hmacSHA256(key: serverSeed, message: Self.message(clientSeed, nonce, round: round))
            offset = 0
        }
        defer { offset += 4 }
        return block[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}
