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
struct UserTable {
    private(set) var records: [UserRecord] = []
    /// Slot + 1 per bucket, 0 for an empty bucket; the capacity is a power of two.
    private var buckets: [UInt32]
    private var mask: Int

    init(expectedCount: Int = 0) {
        var capacity = 16
        while capacity * 7 < max(expectedCount, 1) * 10 { capacity <<= 1 }
        buckets = Array(repeating: 0, count: capacity)
        mask = capacity - 1
        records.reserveCapacity(expectedCount)
    }

    /// The slot of `id`, if the table has seen it.
    func slot(of id: RaveID) -> UInt32? {
        var bucket = Self.hash(id) & mask
        while true {
            let stored = buckets[bucket]
            if stored == 0 { return nil }
            if records[Int(stored - 1)].id == id { return stored - 1 }
            bucket = (bucket + 1) & mask
        }
    }

    /// The slot of `id`, adding an absent record for it the first time.
    mutating func insertSlot(for id: RaveID) -> UInt32 {
        if (records.count + 1) * 10 > buckets.count * 7 { grow() }
        // One walk of the probe sequence both finds the id and, failing that, ends at the bucket it goes in: a
        // load of millions of new players pays one round of cache misses per player, not two.
        var bucket = Self.hash(id) & mask
        while true {
            let stored = buckets[bucket]
            if stored == 0 { break }
            if records[Int(stored - 1)].id == id { return stored - 1 }
            bucket = (bucket + 1) & mask
        }
        let slot = UInt32(records.count)
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

    private mutating func place(_ slot: UInt32) {
        var bucket = Self.hash(records[Int(slot)].id) & mask
        while buckets[bucket] != 0 { bucket = (bucket + 1) & mask }
        buckets[bucket] = slot + 1
    }

    private mutating func grow() {
        buckets = Array(repeating: 0, count: buckets.count * 2)
        mask = buckets.count - 1
        for slot in records.indices { place(UInt32(slot)) }
    }

    /// Rave IDs are mostly random already; the multiply spreads sequential test IDs too.
    private static func hash(_ id: RaveID) -> Int {
        let mixed = (id.high ^ (id.low &* 0x9E37_79B9_7F4A_7C15)) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: mixed >> 17)
    }
}
