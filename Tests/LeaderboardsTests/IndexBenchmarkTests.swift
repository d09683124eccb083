import Foundation
import Testing

@testable import LeaderboardsBenchmarks

@Suite("Index benchmark")
struct IndexBenchmarkTests {
    /// `RAVE_BENCH_INDEX_ENTRIES` raises the size (1000000 for the 1M-entry measurement, in a release build).
    @Test("memory per entry stays at most 48 bytes")
    func memoryPerEntryStaysCompact() {
        let entries = ProcessInfo.processInfo.environment["RAVE_BENCH_INDEX_ENTRIES"].flatMap(Int.init) ?? 100_000
        let result = IndexBenchmark.run(entries: entries, operations: 20_000)
        print("leaderboards index benchmark: \(result)")
        #expect(result.bytesPerEntry <= 48)
    }
}
