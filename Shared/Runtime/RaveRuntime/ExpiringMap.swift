/// Values remembered until an instant, at most `capacity` of them: the caches of what rarely changes (an
/// application's settings, its publisher) that a process keeps for a while and must not let grow without bound.
///
/// A plain value: the owner passes the time and keeps the map behind its lock, so tests drive it with any clock.
/// When a new key finds it full, expired entries go first; if every entry is still fresh, all go, so it never
/// holds more than `capacity`.
public struct ExpiringMap<Key: Hashable, Value> {
    /// The most entries held.
    public let capacity: Int
    private var entries: [Key: (value: Value, until: ContinuousClock.Instant)] = [:]

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Entries held, fresh or not.
    public var count: Int { entries.count }

    /// The value for `key` while it is fresh at `now`, else nil.
    public func value(for key: Key, at now: ContinuousClock.Instant) -> Value? {
        guard let entry = entries[key], entry.until > now else { return nil }
        return entry.value
    }

    /// Remembers `value` for `key` until `until`, replacing an older one; makes room first when full at `now`.
    public mutating func insert(
        _ value: Value, for key: Key, until: ContinuousClock.Instant, now: ContinuousClock.Instant
    ) {
        if entries[key] == nil, entries.count >= capacity {
            entries = entries.filter { $0.value.until > now }
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
        }
        entries[key] = (value, until)
    }
}

extension ExpiringMap: Sendable where Key: Sendable, Value: Sendable {}
