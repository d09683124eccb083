/// The names of statements prepared on one connection, bounded, evicting the least recently used.
///
/// Each prepared statement holds a plan in the server backend's memory; a service that builds many distinct
/// statements would otherwise grow every backend without bound. Eviction is a linear scan, but it only happens
/// when a statement is prepared on a full cache, which a service with a fixed set of statements never hits.
struct PreparedStatementCache {
    let capacity: Int
    private var lastUse: [String: UInt64] = [:]
    private var clock: UInt64 = 0

    init(capacity: Int) {
        precondition(capacity > 0, "the statement cache needs room for at least one statement")
        self.capacity = capacity
    }

    var count: Int { lastUse.count }

    /// Whether `name` is prepared, marking it as just used.
    mutating func lookUp(_ name: String) -> Bool {
        guard lastUse[name] != nil else { return false }
        clock += 1
        lastUse[name] = clock
        return true
    }

    var isFull: Bool { lastUse.count >= capacity }

    /// Makes room for one more statement: removes and returns the least recently used name when full.
    ///
    /// Names in `sparing` (statements the same pipeline is about to execute) are never chosen; nil when the
    /// cache is not full, or when every cached statement is spared.
    mutating func evictIfFull(sparing: Set<String> = []) -> String? {
        guard isFull,
            let oldest = lastUse.filter({ !sparing.contains($0.key) }).min(by: { $0.value < $1.value })?.key
        else {
            return nil
        }
        lastUse[oldest] = nil
        return oldest
    }

    /// Whether a statement outside `sparing` could be evicted.
    func hasEvictable(sparing: Set<String>) -> Bool {
        lastUse.keys.contains { !sparing.contains($0) }
    }

    /// Forgets `name` (its PREPARE failed).
    mutating func remove(_ name: String) {
        lastUse[name] = nil
    }

    /// Records `name` as prepared (and just used).
    mutating func insert(_ name: String) {
        clock += 1
        lastUse[name] = clock
    }
}
