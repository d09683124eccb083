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
/// Players map to dense slots (`UserTable`), whose records hold each player's Rave ID, best score and time once.
/// The rank order is a list of sorted blocks of at most `maximumBlockSize` 4-byte slots; a flat array of each
/// block's first key (score, time, slot) finds the block of a key by one binary search without touching the
/// records, and a Fenwick tree over the block sizes turns "which block holds position p" and "how many entries
/// precede block b" into O(log n) walks. A player's own entry is found in its block by scanning the block's slots
/// for the player's slot (contiguous 4-byte values, eight at a time), not by comparing keys; only an insert compares
/// keys inside a block, reading the records of the slots it passes. Memory per entry: the 32-byte record, the
/// table's buckets (about 7 bytes), and 4 bytes of block per entry at the blocks' fill (5.3 bytes at 3/4).
///
/// Order: the best score first; equal scores by who reached the score first, then by Rave ID, so every entry has
/// a distinct position. Not thread-safe: callers hold a lock around it (see `BoardIndex`).
package struct RankIndex {
    /// True when a lower score is better.
    let ascending: Bool
    private var users: UserTable
    /// The slots of each block's entries, in rank order.
    private var blocks: [[UInt32]] = []
    /// The key of each block's first entry, so finding a block is a binary search over one flat array.
    private var firstKeys: [Key] = []
    private var blockCounts = FenwickTree()
    package private(set) var count = 0

    static let maximumBlockSize = 512

    /// An entry's place in the order: `order` is the score turned so that smaller always sorts first.
    struct Key {
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

    /// Builds an index from unsorted records that come in chunks (as a parallel load returns them): one sort of the
    /// keys, then the blocks filled in order (bottom-up, no inserts).
    init(ascending: Bool, chunks: [[ScoreEntry]]) {
        let total = chunks.reduce(0) { $0 + $1.count }
        self.init(ascending: ascending, expectedCount: total)
        var slots: [UInt32] = []
        slots.reserveCapacity(total)
        for records in chunks {
            for record in records {
                let slot = users.insertSlot(for: record.userID)
                if users[slot].isPresent {
                    // A player listed twice keeps the better score, and its one slot in the list.
                    guard isBetter(record.score, record.achievedAt, than: users[slot]) else { continue }
                } else {
                    slots.append(slot)
                }
                users[slot] = UserRecord(id: record.userID, score: record.score, achievedAt: record.achievedAt)
            }
        }
        // The sort runs over contiguous keys, not over slots whose records it would chase at every comparison.
        var keys = slots.map { key(for: $0) }
        slots = []
        keys.sort { precedes($0, $1) }
        fillBlocks(keys)
    }

    /// An index over `users` whose `count` present entries come from `keys` in rank order (`RankIndexBuilder`).
    init(ascending: Bool, users: UserTable, count: Int, sortedKeys keys: some IteratorProtocol<Key>) {
        self.ascending = ascending
        self.users = users
        fillBlocks(count: count, keys)
    }

    private mutating func fillBlocks(_ keys: [Key]) {
        fillBlocks(count: keys.count, keys.makeIterator())
    }

    /// Cuts `count` sorted keys into blocks, filled in order (bottom-up, no inserts).
    private mutating func fillBlocks(count: Int, _ keys: some IteratorProtocol<Key>) {
        var keys = keys
        // Blocks start three-quarters full: room for inserts before the first splits.
        let fill = Self.maximumBlockSize * 3 / 4
        blocks.reserveCapacity(count / fill + 1)
        firstKeys.reserveCapacity(count / fill + 1)
        var block: [UInt32] = []
        while let key = keys.next() {
            if block.isEmpty {
                block.reserveCapacity(Self.maximumBlockSize)
                firstKeys.append(key)
            }
            block.append(key.slot)
            if block.count == fill {
                blocks.append(block)
                block = []
            }
        }
        if !block.isEmpty { blocks.append(block) }
        self.count = blocks.reduce(0) { $0 + $1.count }
        blockCounts.rebuild(blocks.map(\.count))
    }

    // MARK: - Reading

    /// The player's best score, when it was reached, and its 1-based position.
    package func standing(of userID: RaveID) -> RankedScore? {
        guard let slot = users.slot(of: userID), users[slot].isPresent else { return nil }
        let record = users[slot]
        let (block, index) = location(of: key(for: slot))
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
            let slots = blocks[block]
            while index < slots.count, result.count < limit {
                let record = users[slots[index]]
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
            // The old key leaves before the record changes: removal finds the entry by it.
            if present { removeEntry(key(for: slot)) }
            users[slot] = UserRecord(id: userID, score: score, achievedAt: achievedAt)
            // Where the insert put the entry is its location: no second search for the position.
            (block, index) = insertEntry(key(for: slot))
        } else {
            (block, index) = location(of: key(for: slot))
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
        if users[slot].isPresent { removeEntry(key(for: slot)) }
        users[slot] = UserRecord(id: userID, score: score, achievedAt: achievedAt)
        insertEntry(key(for: slot))
    }

    /// Removes the player's entry; returns whether there was one.
    @discardableResult
    mutating func remove(userID: RaveID) -> Bool {
        guard let slot = users.slot(of: userID), users[slot].isPresent else { return false }
        removeEntry(key(for: slot))
        users[slot].achievedAt = UserRecord.absent
        return true
    }

    /// Bytes of memory the index's storage occupies (array storage; excludes the few fixed-size headers).
    package var residentBytes: Int {
        let arrayHeader = 32
        let blockBytes = blocks.reduce(0) { $0 + arrayHeader + $1.capacity * MemoryLayout<UInt32>.stride }
        return blockBytes + blocks.capacity * MemoryLayout<[UInt32]>.stride
            + firstKeys.capacity * MemoryLayout<Key>.stride + blockCounts.residentBytes + users.residentBytes
    }

    // MARK: - Blocks

    private func key(for slot: UInt32) -> Key {
        Self.key(for: users[slot], slot: slot, ascending: ascending)
    }

    static func key(for record: UserRecord, slot: UInt32, ascending: Bool) -> Key {
        // `~` reverses the order without the overflow negation has at Int64.min.
        Key(order: ascending ? record.score : ~record.score, achievedAt: record.achievedAt, slot: slot)
    }

    private func isBetter(_ score: Int64, _ achievedAt: Int64, than record: UserRecord) -> Bool {
        if score != record.score { return ascending ? score < record.score : score > record.score }
        return achievedAt < record.achievedAt
    }

    private func precedes(_ left: Key, _ right: Key) -> Bool {
        Self.precedes(left, right) { users[$0].id }
    }

    /// The rank order of keys; `id` names a slot's player, for the rare tie on score and time.
    @inline(__always)
    static func precedes(_ left: Key, _ right: Key, id: (UInt32) -> RaveID) -> Bool {
        if left.order != right.order { return left.order < right.order }
        if left.achievedAt != right.achievedAt { return left.achievedAt < right.achievedAt }
        if left.slot == right.slot { return false }
        return id(left.slot) < id(right.slot)
    }

    /// The block that holds (or would hold) `key`: the last one whose first key does not follow it.
    private func block(for key: Key) -> Int {
        var low = 0
        var high = firstKeys.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(key, firstKeys[middle]) { high = middle } else { low = middle + 1 }
        }
        return max(low - 1, 0)
    }

    /// The first index in `block` whose entry does not precede `key` (where an insert puts it).
    private func insertionIndex(of key: Key, in block: Int) -> Int {
        blocks[block].withUnsafeBufferPointer { slots in
            var low = 0
            var high = slots.count
            while low < high {
                let middle = (low + high) / 2
                if precedes(self.key(for: slots[middle]), key) { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }

    /// Where the entry of `key` (which the index holds) is: its block by the first keys, then its slot in the block.
    private func location(of key: Key) -> (block: Int, index: Int) {
        let block = block(for: key)
        let index = blocks[block].withUnsafeBufferPointer { Self.index(of: key.slot, in: $0) }
        guard let index else { preconditionFailure("index out of sync") }
        return (block, index)
    }

    /// The position of `slot` in `slots`, comparing eight slots at a time (a plain loop that stops at the first
    /// match is not vectorised).
    private static func index(of slot: UInt32, in slots: UnsafeBufferPointer<UInt32>) -> Int? {
        var index = 0
        if let base = slots.baseAddress {
            let raw = UnsafeRawPointer(base)
            let wanted = SIMD8<UInt32>(repeating: slot)
            let stride = MemoryLayout<UInt32>.stride
            while index + 8 <= slots.count {
                let lanes = raw.loadUnaligned(fromByteOffset: index * stride, as: SIMD8<UInt32>.self)
                if any(lanes .== wanted) { break }
                index += 8
            }
        }
        while index < slots.count {
            if slots[index] == slot { return index }
            index += 1
        }
        return nil
    }

    /// Inserts `key`'s entry; returns the block and index it ended up at (after a split, if the insert caused one).
    @discardableResult
    private mutating func insertEntry(_ key: Key) -> (block: Int, index: Int) {
        count += 1
        guard !blocks.isEmpty else {
            var block: [UInt32] = []
            block.reserveCapacity(Self.maximumBlockSize)
            block.append(key.slot)
            blocks = [block]
            firstKeys = [key]
            blockCounts.rebuild([1])
            return (0, 0)
        }
        let block = block(for: key)
        let index = insertionIndex(of: key, in: block)
        blocks[block].insert(key.slot, at: index)
        if index == 0 { firstKeys[block] = key }
        blockCounts.add(1, at: block)
        guard blocks[block].count > Self.maximumBlockSize else { return (block, index) }
        let half = split(block)
        return index < half ? (block, index) : (block + 1, index - half)
    }

    private mutating func removeEntry(_ key: Key) {
        let (block, index) = location(of: key)
        count -= 1
        blocks[block].remove(at: index)
        if blocks[block].isEmpty {
            blocks.remove(at: block)
            firstKeys.remove(at: block)
            blockCounts.remove(at: block)
            return
        }
        if index == 0 { firstKeys[block] = self.key(for: blocks[block][0]) }
        blockCounts.add(-1, at: block)
    }

    /// Moves the upper half of a full block into a new block after it; returns how many entries stayed.
    private mutating func split(_ block: Int) -> Int {
        let half = blocks[block].count / 2
        var upper: [UInt32] = []
        upper.reserveCapacity(Self.maximumBlockSize)
        upper.append(contentsOf: blocks[block][half...])
        blocks[block].removeSubrange(half...)
        blocks.insert(upper, at: block + 1)
        firstKeys.insert(key(for: upper[0]), at: block + 1)
        // Splits happen once per half a block of inserts, so an O(blocks) update of the flat sums stays cheap per
        // insert; the sizes come from the sums themselves, not from reading every block's header (cache misses).
        blockCounts.add(-upper.count, at: block)
        blockCounts.insert(upper.count, at: block + 1)
        return half
    }
}
