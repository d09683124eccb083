/// Latencies in log-linear buckets (HDR style): 16 sub-buckets per power of two, so every recorded value
/// is known to within about 6 %, in a fixed 1,024-slot array that merges by addition.
struct LatencyHistogram: Sendable {
    private(set) var counts = [Int](repeating: 0, count: 1024)
    private(set) var total = 0
    private(set) var maximum: UInt64 = 0

    /// Records one latency in microseconds.
    mutating func record(microseconds value: UInt64) {
        counts[Self.bucket(of: value)] += 1
        total += 1
        maximum = max(maximum, value)
    }

    mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
        total += other.total
        maximum = max(maximum, other.maximum)
    }

    /// The latency at `quantile` (0…1), in microseconds: the upper edge of the bucket that holds it.
    func value(atQuantile quantile: Double) -> UInt64 {
        guard total > 0 else { return 0 }
        let rank = max(1, Int((quantile * Double(total)).rounded(.up)))
        var seen = 0
        for (index, count) in counts.enumerated() where count > 0 {
            seen += count
            if seen >= rank { return min(Self.upperEdge(of: index), maximum) }
        }
        return maximum
    }

    static func bucket(of value: UInt64) -> Int {
        guard value >= 16 else { return Int(value) }
        let power = UInt64.bitWidth - value.leadingZeroBitCount - 1
        let shift = power - 4
        return shift * 16 + Int(value >> UInt64(shift))
    }

    static func upperEdge(of bucket: Int) -> UInt64 {
        guard bucket >= 32 else { return UInt64(bucket) }
        let shift = bucket / 16 - 1
        let subBucket = UInt64(bucket % 16 + 16)
        return ((subBucket + 1) << UInt64(shift)) - 1
    }
}
