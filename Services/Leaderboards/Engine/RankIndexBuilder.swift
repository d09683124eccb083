import RavePostgres

/// Builds the index of a board version from the table's entries while they are still being read.
///
/// The entries of one version name distinct players (the table's key is board, version, player), so an entry
/// becomes a record without a hash look-up, and the hash table is built once at the end (`UserTable(distinctRecords:)`).
/// Each chunk's keys are sorted as the chunk arrives, and sorted runs of equal size are merged as they appear (a
/// binary counter): the sorting overlaps the reading, and when the last chunk arrives only a few merges are left,
/// which run beside the hash table's build. The result equals `RankIndex(ascending:chunks:)` over the same entries.
struct RankIndexBuilder {
    let ascending: Bool
    private var records: [UserRecord] = []
    /// Sorted runs of keys, each at least as long as the next.
    private var runs: [[RankIndex.Key]] = []
    /// Where the records not yet in a run start.
    private var pending = 0

    init(ascending: Bool) {
        self.ascending = ascending
    }

    var count: Int { records.count }

    /// Adds a chunk of entries of players not added before.
    mutating func add(_ chunk: ScoreChunk) {
        for index in 0..<chunk.count {
            records.append(
                UserRecord(id: chunk.userID(index), score: chunk.score(index), achievedAt: chunk.achievedAt(index)))
        }
        endRun()
    }

    /// Adds entries of players not added before (tests and tools).
    mutating func add(_ entries: [ScoreEntry]) {
        for entry in entries {
            records.append(UserRecord(id: entry.userID, score: entry.score, achievedAt: entry.achievedAt))
        }
        endRun()
    }

    /// The index; the hash table and the last merges run concurrently.
    consuming func build() async -> RankIndex {
        endRun()
        // Appends grew the records by doubling: keep one exact copy, as the index's memory bound assumes.
        var exact = records
        if records.capacity > records.count + records.count / 8 {
            exact = [UserRecord](unsafeUninitializedCapacity: records.count) { buffer, initialized in
                _ = buffer.initialize(fromContentsOf: records)
                initialized = records.count
            }
        }
        records = []
        let final = exact
        async let users = UserTable(distinctRecords: final)
        var runs = self.runs
        self.runs = []
        while runs.count > 1 {
            let last = runs.removeLast()
            runs[runs.count - 1] = Self.merge(runs[runs.count - 1], last, records: final)
        }
        return RankIndex(ascending: ascending, users: await users, sortedKeys: runs.first ?? [])
    }

    /// Sorts the keys of the records added since the last run into a run, and merges runs of equal size.
    private mutating func endRun() {
        guard pending < records.count else { return }
        var keys = [RankIndex.Key]()
        keys.reserveCapacity(records.count - pending)
        for slot in pending..<records.count {
            keys.append(RankIndex.key(for: records[slot], slot: UInt32(slot), ascending: ascending))
        }
        pending = records.count
        records.withUnsafeBufferPointer { records in
            keys.sort { RankIndex.precedes($0, $1) { records[Int($0)].id } }
        }
        runs.append(keys)
        while runs.count > 1, runs[runs.count - 2].count <= runs[runs.count - 1].count {
            let last = runs.removeLast()
            runs[runs.count - 1] = Self.merge(runs[runs.count - 1], last, records: records)
        }
    }

    /// The keys of two sorted runs in one sorted run.
    private static func merge(
        _ left: [RankIndex.Key], _ right: [RankIndex.Key], records: [UserRecord]
    ) -> [RankIndex.Key] {
        let total = left.count + right.count
        return [RankIndex.Key](unsafeUninitializedCapacity: total) { output, initialized in
            records.withUnsafeBufferPointer { records in
                left.withUnsafeBufferPointer { left in
                    right.withUnsafeBufferPointer { right in
                        var next = 0
                        var fromLeft = 0
                        var fromRight = 0
                        while fromLeft < left.count, fromRight < right.count {
                            // The left run's key first on equality keeps the merge stable (keys are distinct anyway).
                            if RankIndex.precedes(right[fromRight], left[fromLeft], id: { records[Int($0)].id }) {
                                output.initializeElement(at: next, to: right[fromRight])
                                fromRight += 1
                            } else {
                                output.initializeElement(at: next, to: left[fromLeft])
                                fromLeft += 1
                            }
                            next += 1
                        }
                        while fromLeft < left.count {
                            output.initializeElement(at: next, to: left[fromLeft])
                            fromLeft += 1
                            next += 1
                        }
                        while fromRight < right.count {
                            output.initializeElement(at: next, to: right[fromRight])
                            fromRight += 1
                            next += 1
                        }
                    }
                }
            }
            initialized = total
        }
    }
}
