import Foundation
import Leaderboards
import RaveCrypto
import RavePostgres

/// Measures the in-memory index alone: bulk build, inserts, rank and select rates, and memory per entry.
///
/// `rave-bench leaderboards` runs it; tests call it too (debug builds, small sizes). `ravectl loadtest leaderboards`
/// is the end-to-end load tester.
enum IndexBenchmark {
    struct Result: Sendable, CustomStringConvertible {
        var entries: Int
        var buildSeconds: Double
        var insertsPerSecond: Double
        var ranksPerSecond: Double
        var pagesPerSecond: Double
        /// The index's own count of its storage (`RankIndex.residentBytes`) per entry, after the build.
        var bytesPerEntry: Double
        /// The growth of the process's resident memory over the build, per entry; nil where the system cannot say.
        var residentSetBytesPerEntry: Double?
        /// `bytesPerEntry` after the inserts (the index then holds `entries` + the inserted players, and its
        /// tables and blocks have grown).
        var bytesPerEntryAfterInserts: Double

        var description: String {
            "entries=\(entries) build=\(rounded(buildSeconds))s inserts/s=\(Int(insertsPerSecond)) "
                + "ranks/s=\(Int(ranksPerSecond)) top100-pages/s=\(Int(pagesPerSecond)) "
                + "bytes/entry=\(rounded(bytesPerEntry)) rss-bytes/entry=\(residentSetBytesPerEntry.map(rounded) ?? "-") "
                + "after-inserts=\(rounded(bytesPerEntryAfterInserts))"
        }

        private func rounded(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
    }

    /// Builds an index of `entries` random scores, then times `operations` of each kind against it.
    static func run(entries: Int, operations: Int, seed: UInt64 = 42) -> Result {
        var random = SplitMix64(seed: seed)
        let records = (0..<entries).map { offset in
            (
                userID: RaveID(high: random.next(), low: random.next()), score: Int64(random.next() % 1_000_000),
                achievedAt: Int64(offset)
            )
        }
        let clock = ContinuousClock()
        var index = RankIndex(ascending: false, records: [])
        let residentBefore = residentSetBytes()
        let build = clock.measure { index = RankIndex(ascending: false, records: records) }
        let bytes = Double(index.residentBytes) / Double(max(entries, 1))
        let residentAfterBuild = residentSetBytes()

        var checksum = 0
        let ranks = clock.measure {
            for step in 0..<operations {
                checksum &+= index.standing(of: records[step % entries].userID)?.position ?? 0
            }
        }
        let pages = clock.measure {
            for step in 0..<operations {
                checksum &+= index.scores(from: 1 + step % max(entries - 100, 1), limit: 100).count
            }
        }
        let inserts = clock.measure {
            for step in 0..<operations {
                index.record(
                    userID: RaveID(high: random.next(), low: random.next()), score: Int64(random.next() % 1_000_000),
                    achievedAt: Int64(entries + step))
            }
        }
        precondition(checksum != 0, "keeps the loops from being optimized away")
        let bytesAfterInserts = Double(index.residentBytes) / Double(max(index.count, 1))
        return Result(
            entries: entries, buildSeconds: seconds(build), insertsPerSecond: Double(operations) / seconds(inserts),
            ranksPerSecond: Double(operations) / seconds(ranks), pagesPerSecond: Double(operations) / seconds(pages),
            bytesPerEntry: bytes,
            residentSetBytesPerEntry: residentBefore.flatMap { before in
                residentAfterBuild.map { Double($0 - before) / Double(max(entries, 1)) }
            },
            bytesPerEntryAfterInserts: bytesAfterInserts)
    }

    /// The process's resident set in bytes (`/proc/self/statm`, Linux), nil where there is none.
    ///
    /// Temporaries a build frees are mostly large, mapped chunks that malloc returns at once, so the growth over a
    /// build is the index itself (plus whatever freed heap malloc keeps: an overstatement, never an understatement).
    private static func residentSetBytes() -> Int? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (whole, fraction) = duration.components
        return max(Double(whole) + Double(fraction) * 1e-18, 1e-9)
    }

}
