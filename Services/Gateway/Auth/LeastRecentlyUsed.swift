/// A map of at most `capacity` entries that forgets the least recently used one to make room.
///
/// Nodes live in one array linked by indices, so lookups and insertions allocate nothing once the cache is
/// full. Not thread-safe: owners keep it behind a `Mutex`.
struct LeastRecentlyUsed<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
        var newer: Int
        var older: Int
    }

    let capacity: Int
    private var nodes: [Node] = []
    private var indices: [Key: Int] = [:]
    /// Most recently used node, or -1 when empty.
    private var newest = -1
    /// Least recently used node, or -1 when empty.
    private var oldest = -1

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Entries held.
    var count: Int { indices.count }

    /// The value for `key`, which becomes the most recently used entry.
    mutating func value(for key: Key) -> Value? {
        guard let index = indices[key] else { return nil }
        moveToFront(index)
        return nodes[index].value
    }

    /// Stores `value` for `key` as the most recently used entry, evicting the least recently used when full.
    mutating func insert(_ value: Value, for key: Key) {
        if let index = indices[key] {
            nodes[index].value = value
            moveToFront(index)
            return
        }
        let index: Int
        if nodes.count < capacity {
            index = nodes.count
            nodes.append(Node(key: key, value: value, newer: -1, older: -1))
        } else {
            // Reuse the oldest node for the new entry.
            index = oldest
            unlink(index)
            // A parked (removed) node's key may live again elsewhere; only a live entry is forgotten.
            if indices[nodes[index].key] == index { indices[nodes[index].key] = nil }
            nodes[index] = Node(key: key, value: value, newer: -1, older: -1)
        }
        indices[key] = index
        linkAtFront(index)
    }

    /// Forgets every entry `shouldRemove` accepts (a walk of the whole map: for rare events, not per call).
    mutating func removeAll(where shouldRemove: (Key, Value) -> Bool) {
        let doomed = indices.compactMap { key, index in shouldRemove(key, nodes[index].value) ? key : nil }
        for key in doomed { remove(key) }
    }

    /// Forgets `key` (its node stays allocated and is reused by the next insertion once it is the oldest).
    mutating func remove(_ key: Key) {
        guard let index = indices.removeValue(forKey: key) else { return }
        unlink(index)
        // Park the node at the old end so the next eviction reuses it before any live entry.
        if oldest == -1 {
            newest = index
            oldest = index
        } else {
            nodes[oldest].older = index
            nodes[index].newer = oldest
            oldest = index
        }
    }

    private mutating func moveToFront(_ index: Int) {
        guard newest != index else { return }
        unlink(index)
        linkAtFront(index)
    }

    private mutating func unlink(_ index: Int) {
        let newer = nodes[index].newer
        let older = nodes[index].older
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        nodes[index].newer = -1
        nodes[index].older = -1
    }

    private mutating func linkAtFront(_ index: Int) {
        nodes[index].older = newest
        nodes[index].newer = -1
        if newest >= 0 { nodes[newest].newer = index }
        newest = index
        if oldest == -1 { oldest = index }
    }
}
