import Foundation

/// `rave-bench leaderboards`: the in-memory rank index alone (`IndexBenchmark`).
///
/// `RAVE_BENCH_INDEX_ENTRIES` entries (default 1,000,000), `RAVE_BENCH_INDEX_OPERATIONS` of each operation (default
/// 200,000); a summary on stdout and `.bench/leaderboards-index.json` (or `RAVE_BENCH_OUT`). The service under load is
/// measured by scripts/bench-leaderboards.sh (`ravectl loadtest leaderboards`).
package enum IndexBenchmarkCommand {
    package static func run(environment: [String: String]) async -> Int32 {
        let entries = max(1_000, environment["RAVE_BENCH_INDEX_ENTRIES"].flatMap(Int.init) ?? 1_000_000)
        let operations = max(1_000, environment["RAVE_BENCH_INDEX_OPERATIONS"].flatMap(Int.init) ?? 200_000)
        let result = IndexBenchmark.run(entries: entries, operations: operations)
        print("leaderboards index: \(result)")
        let json =
            "{\"benchmark\":\"leaderboards-index\",\"entries\":\(result.entries),"
            + "\"build_seconds\":\(result.buildSeconds),\"inserts_per_second\":\(Int(result.insertsPerSecond)),"
            + "\"ranks_per_second\":\(Int(result.ranksPerSecond)),"
            + "\"top100_pages_per_second\":\(Int(result.pagesPerSecond)),"
            + "\"bytes_per_entry\":\(result.bytesPerEntry),"
            + "\"rss_bytes_per_entry\":\(result.residentSetBytesPerEntry.map { "\($0)" } ?? "null"),"
            + "\"bytes_per_entry_after_inserts\":\(result.bytesPerEntryAfterInserts)}\n"
        let path = environment["RAVE_BENCH_OUT"] ?? ".bench/leaderboards-index.json"
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try json.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            print("rave-bench leaderboards: cannot write \(path): \(error)")
            return 1
        }
        return 0
    }
}
