// What the decoder fuzzers share; scripts/fuzz.sh compiles it into each of their modules.

/// Piece sizes from 1 to 64 bytes that add up to `total`, from a small linear congruential generator: how a
/// fuzzer cuts its input into reads, so a decoder fed in pieces can be compared with one fed at once.
func pieceSizes(seed: UInt8, total: Int) -> [Int] {
    var state = UInt32(seed) &* 2_654_435_761 | 1
    var sizes: [Int] = []
    var remaining = total
    while remaining > 0 {
        state = state &* 1_664_525 &+ 1_013_904_223
        let size = min(remaining, Int(state >> 26) + 1)
        sizes.append(size)
        remaining -= size
    }
    return sizes
}
