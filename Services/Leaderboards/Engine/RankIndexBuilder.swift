import RavePostgres

/// Builds the index of a board version from the table's entries while they are still being read.
///
/// The entries of one version name distinct players (the table's key is board, version, player), so an entry
/// becomes a record without a hash look-up, and the hash table is built once at the end (`UserTable(distinctRecords:)`).
/// Each chunk's keys are sorted as the chunk arrives, and runs of equal size are merged up to a million keys,
/// overlapping the reading; at the end one k-way merge of those runs fills the blocks directly (no merged copies of
/// the whole: arrays of hundreds of megabytes cost as much in page faults as the merging itself), beside the hash
/// table's build. The result equals `RankIndex(ascending:chunks:)` over the
/// same entries.
struct RankIndexBuilder {
    let ascending: Bool
    private var records: [UserRecord] = []
    /// Sorted runs of keys: each chunk's, merged up to `largestMergedRun`.
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

    /// The index; the hash table is built while the runs are merged into the blocks.
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
        let merged = RunMerger(runs: runs, records: final)
        runs = []
        return RankIndex(ascending: ascending, users: await users, count: final.count, sortedKeys: merged)
    }

    /// Sorts the keys of the records added since the last run into a run.
    private mutating func endRun() {
        guard pending < records.count else { return }
        var keys = [RankIndex.Key]()
        keys.reserveCapacity(records.count - pending)
        records.withUnsafeBufferPointer { records in
            for slot in pending..<records.count {
                keys.append(RankIndex.key(for: records[slot], slot: UInt32(slot), ascending: ascending))
            }
            keys.sort { RankIndex.precedes($0, $1) { records[Int($0)].id } }
        }
        pending = records.count
        runs.append(keys)
        // Runs of equal size merge while they are read, up to a size whose arrays the allocator reuses instead
        // of mapping fresh pages: the final merge then has about ten runs to go through per million entries.
        while runs.count > 1, runs[runs.count - 2].count <= runs[runs.count - 1].count,
            runs[runs.count - 2].count + runs[runs.count - 1].count <= Self.largestMergedRun
        {
            let last = runs.removeLast()
            runs[runs.count - 1] = Self.merge(runs[runs.count - 1], last, records: records)
        }
    }

    static let largestMergedRun = 1 << 20

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
                            if RankIndex.precedes(right[fromRight], left[fromLeft], id: { records[Int($0)].id }) {
                                output.initializeElement(at: next, to: right[fromRight])
                                fromRight += 1
                            } else {
                                output.initializeElement(at: next, to: left[fromLeft])
                                fromLeft += 1
                            }
                            next += 1
                        }
                        for index in fromLeft..<left.count {
                            output.initializeElement(at: next, to: left[index])
                            next += 1
                        }
                        for index in fromRight..<right.count {
                            output.initializeElement(at: next, to: right[index])
                            next += 1
                        }
                    }
                }
            }
            initialized = total
        }
    }
}

/// The keys of sorted runs in one order: a binary heap of each run's next key, the smallest on top.
private struct RunMerger: IteratorProtocol {
    private let runs: [[RankIndex.Key]]
    private let records: [UserRecord]
    /// The run of each heap entry and its next index in that run.
    private var heap: [(run: Int, next: Int)] = []

    init(runs: [[RankIndex.Key]], records: [UserRecord]) {
        self.runs = runs
        self.records = records
        for run in runs.indices where !runs[run].isEmpty {
            heap.append((run, 0))
            siftUp(heap.count - 1)
        }
    }

    mutating func next() -> RankIndex.Key? {
        guard let top = heap.first else { return nil }
        let key = runs[top.run][top.next]
        if top.next + 1 < runs[top.run].count {
            heap[0].next += 1
        } else {
            heap[0] = heap[heap.count - 1]
            heap.removeLast()
        }
        if !heap.isEmpty { siftDown(0) }
        return key
    }

    private func precedes(_ left: (run: Int, next: Int), _ right: (run: Int, next: Int)) -> Bool {
        records.withUnsafeBufferPointer { records in
            RankIndex.precedes(runs[left.run][left.next], runs[right.run][right.next]) { records[Int($0)].id }
        }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var smallest = left
            if left + 1 < heap.count, precedes(heap[left + 1], heap[left]) { smallest = left + 1 }
            guard precedes(heap[smallest], heap[parent]) else { return }
            heap.swapAt(smallest, parent)
            parent = smallest
        }
    }
}
