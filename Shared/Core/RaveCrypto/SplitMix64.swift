/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny, fast generator whose whole sequence follows from its seed.
///
/// For what must be repeatable (property tests replayed from a seed, benchmark and load-test plans), never for
/// keys, tokens or anything a client must not guess: those take `SecureRandom`.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }

    /// A uniform double in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}
