import RavePostgres

/// A player's best in one board version, as the index holds it.
struct UserRecord {
    var id: RaveID
    var score: Int64
    /// Microseconds since the Unix epoch; `UserRecord.absent` when the player has no entry (removed by a merge).
    var achievedAt: Int64

    static let absent = Int64.min

    var isPresent: Bool { achievedAt != Self.absent }
}

/// Maps Rave IDs to dense slots with an open-addressing hash table, and keeps each slot's best score.
///
/// Slots are never freed: a removed player keeps its slot (marked absent) and gets it back when it scores again,
/// so the hash table never needs tombstones. Not thread-safe: the owning `RankIndex` is guarded by its caller.
///
/// Memory per player: a 32-byte record plus 4-byte buckets at a load of 0.47…0.7. The bucket count is not a power
/// of two (a hash maps onto any count by a multiply, `home(of:)`), so the table grows by half rather than double,
/// and the records grow by an eighth: neither ever holds twice what the players need.
struct UserTable {
    private(set) var records: [UserRecord] = []
    /// Slot + 1 per bucket, 0 for an empty bucket.
    private var buckets: [UInt32]

    init(expectedCount: Int = 0) {
        // A load of 0.6 when built for `expectedCount` players: room for new players before the first rehash.
        buckets = Array(repeating: 0, count: max(16, expectedCount * 5 / 3 + 1))
        records.reserveCapacity(expectedCount)
    }

    /// A table over `records`, which name distinct players (a version's rows, one per player), hashed in one pass.
    ///
    /// Placing 10 million records in arrival order is one cache miss each (the buckets are far larger than the
    /// caches); here they are placed grouped by the part of the bucket array their home falls in, so each group's
    /// probes stay within a few kilobytes of buckets. With linear probing the order of placement does not change
    /// what a look-up finds.
    init(distinctRecords: [UserRecord]) {
        records = distinctRecords
        buckets = Array(repeating: 0, count: max(16, distinctRecords.count * 5 / 3 + 1))
        let groups = 4096
        let bucketCount = UInt64(buckets.count)
        var starts = [Int](repeating: 0, count: groups + 1)
        var placement = [UInt64](repeating: 0, count: records.count)
        records.withUnsafeBufferPointer { records in
            func group(_ home: Int) -> Int { Int(UInt64(home) * UInt64(groups) / bucketCount) }
            for record in records { starts[group(home(of: record.id)) + 1] += 1 }
            for group in 0..<groups { starts[group + 1] += starts[group] }
            // (home, slot) pairs grouped by home, so the placing pass below reads them in order.
            var next = starts
            for slot in records.indices {
                let home = home(of: records[slot].id)
                placement[next[group(home)]] = UInt64(home) << 32 | UInt64(slot)
                next[group(home)] += 1
            }
        }
        buckets.withUnsafeMutableBufferPointer { buckets in
            for pair in placement {
                var bucket = Int(pair >> 32)
                while buckets[bucket] != 0 { bucket = bucket + 1 == buckets.count ? 0 : bucket + 1 }
                buckets[bucket] = UInt32(truncatingIfNeeded: pair) + 1
            }
        }
    }

    /// The slot of `id`, if the table has seen it.
    func slot(of id: RaveID) -> UInt32? {
        var bucket = home(of: id)
        while true {
            let stored = buckets[bucket]
            if stored == 0 { return nil }
            if records[Int(stored - 1)].id == id { return stored - 1 }
            bucket = next(bucket)
        }
    }

    /// The slot of `id`, adding an absent record for it the first time.
    mutating func insertSlot(for id: RaveID) -> UInt32 {
        if (records.count + 1) * 10 > buckets.count * 7 { grow() }
        // One walk of the probe sequence both finds the id and, failing that, ends at the bucket it goes in: a
        // load of millions of new players pays one round of cache misses per player, not two.
        var bucket = home(of: id)
        while true {
            let stored = buckets[bucket]
            if stored == 0 { break }
            if records[Int(stored - 1)].id == id { return stored - 1 }
            bucket = next(bucket)
        }
        let slot = UInt32(records.count)
        if records.count == records.capacity { records.reserveCapacity(records.count + records.count / 8 + 16) }
        records.append(UserRecord(id: id, score: 0, achievedAt: UserRecord.absent))
        buckets[bucket] = slot + 1
        return slot
    }

    subscript(slot: UInt32) -> UserRecord {
        get { records[Int(slot)] }
        set { records[Int(slot)] = newValue }
    }

    /// Bytes of memory the table's storage occupies, for the memory-per-entry measurement.
    var residentBytes: Int {
        records.capacity * MemoryLayout<UserRecord>.stride + buckets.capacity * MemoryLayout<UInt32>.stride
    }

    /// The first bucket `id` may sit in: the hash scaled onto the bucket count (the high half of the product).
    private func home(of id: RaveID) -> Int {
        Int(truncatingIfNeeded: Self.hash(id).multipliedFullWidth(by: UInt64(buckets.count)).high)
    }

    private func next(_ bucket: Int) -> Int {
        bucket + 1 == buckets.count ? 0 : bucket + 1
    }

    private mutating func place(_ slot: UInt32) {
        var bucket = home(of: records[Int(slot)].id)
        while buckets[bucket] != 0 { bucket = next(bucket) }
        buckets[bucket] = slot + 1
    }

    private mutating func grow() {
        buckets = Array(repeating: 0, count: buckets.count * 3 / 2)
        for slot in records.indices { place(UInt32(slot)) }
    }

    /// Rave IDs are mostly random already; the multiplies spread sequential test IDs into the high bits too.
    private static func hash(_ id: RaveID) -> UInt64 {
        (id.high ^ (id.low &* 0x9E37_79B9_7F4A_7C15)) &* 0xBF58_476D_1CE4_E5B9
    }
}
