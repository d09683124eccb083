import RaveCrypto

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
        block = Digest.hmacSHA256(key: serverSeed, message: Self.message(clientSeed, nonce, round: nil))
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
            block = Digest.hmacSHA256(key: serverSeed, message: Self.message(clientSeed, nonce, round: round))
            offset = 0
        }
        defer { offset += 4 }
        return block[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}
