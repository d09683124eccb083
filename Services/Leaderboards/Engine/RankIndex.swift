import RavePostgres

/// One scored player in rank order, as queries return it.
package struct RankedScore: Hashable, Sendable {
    var userID: RaveID
    var score: Int64
    /// Microseconds since the Unix epoch.
    var achievedAt: Int64
    /// 1-based.
    package var position: Int
}

/// The order-statistic index of one board version: every player's best score, in rank order.
///
/// Entries live in sorted blocks of at most `maximumBlockSize` packed 24-byte entries; a Fenwick tree over the
/// block sizes turns "which block holds position p" and "how many entries precede block b" into O(log n) walks.
/// Rank, select and lookup cost O(log n); an insert adds one memmove of at most a block, which stays cheap because
/// blocks are small. Players map to dense slots (`UserTable`), so an entry stores a 4-byte slot, not a 16-byte ID.
///
/// Order: the best score first; equal scores by who reached the score first, then by Rave ID, so every entry has
/// a distinct position. Not thread-safe: callers hold a lock around it (see `BoardIndex`).
package struct RankIndex {
    /// True when a lower score is better.
    let ascending: Bool
    private var users: UserTable
    private var blocks: [[Entry]] = []
    /// The first entry of each block, so finding a block is a binary search over one flat array.
    private var firstEntries: [Entry] = []
    private var blockCounts = FenwickTree()
    package private(set) var count = 0

    static let maximumBlockSize = 512

    /// The packed form: `order` is the score turned so that smaller always sorts first.
    private struct Entry {
        var order: Int64
        var achievedAt: Int64
        var slot: UInt32
    }

    init(ascending: Bool, expectedCount: Int = 0) {
        self.ascending = ascending
        users = UserTable(expectedCount: expectedCount)
    }

    /// Builds an index from unsorted records in O(n log n), much faster than inserting them one by one.
    package init(ascending: Bool, records: [ScoreEntry]) {
        self.init(ascending: ascending, chunks: [records])
    }

    /// Builds an index from unsorted records that come in chunks (as a parallel load returns them).
    init(ascending: Bool, chunks: [[ScoreEntry]]) {
        let total = chunks.reduce(0) { $0 + $1.count }
        self.init(ascending: ascending, expectedCount: total)
        var entries: [Entry] = []
        entries.reserveCapacity(total)
        for records in chunks {
            for record in records {
                let slot = users.insertSlot(for: record.userID)
                if users[slot].isPresent {
                    guard isBetter(record.score, record.achievedAt, than: users[slot]) else { continue }
                    entries.removeAll { $0.slot == slot }
                }
                users[slot] = UserRecord(id: record.userID, score: record.score, achievedAt: record.achievedAt)
                entries.append(entry(for: slot))
            }
        }
        entries.sort { precedes($0, $1) }
        // Blocks start three-quarters full: room for inserts before the first splits.
        let fill = Self.maximumBlockSize * 3 / 4
        var start = 0
        while start < entries.count {
            let end = min(start + fill, entries.count)
            var block: [Entry] = []
            block.reserveCapacity(Self.maximumBlockSize)
            block.append(contentsOf: entries[start..<end])
            blocks.append(block)
            firstEntries.append(block[0])
            start = end
        }
        count = entries.count
        blockCounts.rebuild(blocks.map(\.count))
    }

    // MARK: - Reading

    /// The player's best score, when it was reached, and its 1-based position.
    package func standing(of userID: RaveID) -> RankedScore? {
        guard let slot = users.slot(of: userID), users[slot].isPresent else { return nil }
        let record = users[slot]
        let (block, index) = location(of: entry(for: slot))
        return RankedScore(
            userID: userID, score: record.score, achievedAt: record.achievedAt,
            position: blockCounts.prefixSum(block) + index + 1)
    }

    /// Up to `limit` entries starting at the 1-based `position`.
    package func scores(from position: Int, limit: Int) -> [RankedScore] {
        guard position >= 1, position <= count, limit > 0 else { return [] }
        var (block, index) = blockCounts.find(position - 1)
        var result: [RankedScore] = []
        result.reserveCapacity(min(limit, count - position + 1))
        while result.count < limit, block < blocks.count {
            let entries = blocks[block]
            while index < entries.count, result.count < limit {
                let record = users[entries[index].slot]
                result.append(
                    RankedScore(
                        userID: record.id, score: record.score, achievedAt: record.achievedAt,
                        position: position + result.count))
                index += 1
            }
            block += 1
            index = 0
        }
        return result
    }

    /// Whether `score`, reached at `achievedAt`, would replace the player's best (true when the player has none).
    ///
    /// A better score wins; an equal score wins only if it was reached earlier, which lets two racing submits of
    /// the same score settle on the first one, in memory and in the table alike.
    func improves(_ score: Int64, achievedAt: Int64, for userID: RaveID) -> Bool {
        guard let slot = users.slot(of: userID), users[slot].isPresent else { return true }
        return isBetter(score, achievedAt, than: users[slot])
    }

    // MARK: - Writing

    /// Keeps `score` as the player's best if it `improves` on the one held; returns whether it replaced it.
    @discardableResult
    package mutating func record(userID: RaveID, score: Int64, achievedAt: Int64) -> Bool {
        guard improves(score, achievedAt: achievedAt, for: userID) else { return false }
        replace(userID: userID, score: score, achievedAt: achievedAt)
        return true
    }

    /// `record` and then `standing` with one look-up of the player: whether the score replaced the best, and the
    /// player's best and position afterwards (the submit path, which answers both).
    mutating func recordStanding(
        userID: RaveID, score: Int64, achievedAt: Int64
    ) -> (replaced: Bool, standing: RankedScore) {
        let slot = users.insertSlot(for: userID)
        let present = users[slot].isPresent
        let replaced = !present || isBetter(score, achievedAt, than: users[slot])
        let block: Int
        let index: Int
        if replaced {
            if present { removeEntry(entry(for: slot)) }
            users[slot] = UserRecord(id: userID, score: score, achievedAt: achievedAt)
            // Where the insert put the entry is its location: no second search for the position.
            (block, index) = insertEntry(entry(for: slot))
        } else {
            (block, index) = location(of: entry(for: slot))
        }
        let record = users[slot]
        let standing = RankedScore(
            userID: userID, score: record.score, achievedAt: record.achievedAt,
            position: blockCounts.prefixSum(block) + index + 1)
        return (replaced, standing)
    }

    /// Sets the player's entry whatever it held before (merges apply the database's verdict this way).
    mutating func replace(userID: RaveID, score: Int64, achievedAt: Int64) {
        let slot = users.insertSlot(for: userID)
        if users[slot].isPresent { removeEntry(entry(for: slot)) }
        users[slot] = UserRecord(id: userID, score: score, achievedAt: achievedAt)
        insertEntry(entry(for: slot))
    }

    /// Removes the player's entry; returns whether there was one.
    @discardableResult
    mutating func remove(userID: RaveID) -> Bool {
        guard let slot = users.slot(of: userID), users[slot].isPresent else { return false }
        removeEntry(entry(for: slot))
        users[slot].achievedAt = UserRecord.absent
        return true
    }

    /// Bytes of memory the index's storage occupies (array storage; excludes the few fixed-size headers).
    package var residentBytes: Int {
        let arrayHeader = 32
        let blockBytes = blocks.reduce(0) { $0 + arrayHeader + $1.capacity * MemoryLayout<Entry>.stride }
        return blockBytes + blocks.capacity * MemoryLayout<[Entry]>.stride
            + firstEntries.capacity * MemoryLayout<Entry>.stride + blockCounts.residentBytes + users.residentBytes
    }

    // MARK: - Blocks

    private func entry(for slot: UInt32) -> Entry {
        let record = users[slot]
        // `~` reverses the order without the overflow negation has at Int64.min.
        return Entry(order: ascending ? record.score : ~record.score, achievedAt: record.achievedAt, slot: slot)
    }

    private func isBetter(_ score: Int64, _ achievedAt: Int64, than record: UserRecord) -> Bool {
        if score != record.score { return ascending ? score < record.score : score > record.score }
        return achievedAt < record.achievedAt
    }

    private func precedes(_ left: Entry, _ right: Entry) -> Bool {
        if left.order != right.order { return left.order < right.order }
        if left.achievedAt != right.achievedAt { return left.achievedAt < right.achievedAt }
        if left.slot == right.slot { return false }
        return users[left.slot].id < users[right.slot].id
    }

    /// The block that holds (or would hold) `entry`: the last one whose first entry does not follow it.
    private func block(for entry: Entry) -> Int {
        var low = 0
        var high = firstEntries.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(entry, firstEntries[middle]) { high = middle } else { low = middle + 1 }
        }
        return max(low - 1, 0)
    }

    /// The first index in `block` whose entry does not precede `entry`.
    private func lowerBound(of entry: Entry, in block: Int) -> Int {
        let entries = blocks[block]
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(entries[middle], entry) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func location(of entry: Entry) -> (block: Int, index: Int) {
        let block = block(for: entry)
        return (block, lowerBound(of: entry, in: block))
    }

    /// Inserts `entry`; returns the block and index it ended up at (after a split, if the insert caused one).
    @discardableResult
    private mutating func insertEntry(_ entry: Entry) -> (block: Int, index: Int) {
        count += 1
        guard !blocks.isEmpty else {
            var block: [Entry] = []
            block.reserveCapacity(Self.maximumBlockSize)
            block.append(entry)
            blocks = [block]
            firstEntries = [entry]
            blockCounts.rebuild([1])
            return (0, 0)
        }
        let (block, index) = location(of: entry)
        blocks[block].insert(entry, at: index)
        if index == 0 { firstEntries[block] = entry }
        blockCounts.add(1, at: block)
        guard blocks[block].count > Self.maximumBlockSize else { return (block, index) }
        let half = split(block)
        return index < half ? (block, index) : (block + 1, index - half)
    }

    private mutating func removeEntry(_ entry: Entry) {
        let (block, index) = location(of: entry)
        precondition(index < blocks[block].count && blocks[block][index].slot == entry.slot, "index out of sync")
        count -= 1
        blocks[block].remove(at: index)
        if blocks[block].isEmpty {
            blocks.remove(at: block)
            firstEntries.remove(at: block)
            blockCounts.remove(at: block)
            return
        }
        if index == 0 { firstEntries[block] = blocks[block][0] }
        blockCounts.add(-1, at: block)
    }

    /// Moves the upper half of a full block into a new block after it; returns how many entries stayed.
    private mutating func split(_ block: Int) -> Int {
        let half = blocks[block].count / 2
        var upper: [Entry] = []
        upper.reserveCapacity(Self.maximumBlockSize)
        upper.append(contentsOf: blocks[block][half...])
        blocks[block].removeSubrange(half...)
        blocks.insert(upper, at: block + 1)
        firstEntries.insert(upper[0], at: block + 1)
        // Splits happen once per half a block of inserts, so an O(blocks) update of the flat sums stays cheap per
        // insert; the sizes come from the sums themselves, not from reading every block's header (cache misses).
        blockCounts.add(-upper.count, at: block)
        blockCounts.insert(upper.count, at: block + 1)
        return half
    }
}
