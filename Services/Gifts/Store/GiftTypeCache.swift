import RavePostgres
import Synchronization

/// Recently read gift types, so that a send names its type without a round trip to PostgreSQL.
///
/// An entry lives `timeToLive` (2 s): an operator's edit made through another replica reaches this one's sends
/// within that, and one made through this process replaces the entry at once. Unknown keys are not remembered,
/// so a type created elsewhere is usable as soon as it commits.
final class GiftTypeCache: Sendable {
    private struct Key: Hashable {
        var appID: RaveID
        var key: String
    }

    private struct Entry {
        var type: GiftTypeRecord
        var readAt: ContinuousClock.Instant
    }

    let timeToLive: Duration
    /// Past this many entries the cache starts over rather than tracking recency: types are few per application,
    /// so only a flood of applications fills it.
    private let capacity: Int
    private let entries = Mutex<[Key: Entry]>([:])

    init(timeToLive: Duration = .seconds(2), capacity: Int = 10_000) {
        self.timeToLive = timeToLive
        self.capacity = capacity
    }

    /// The type named `key` in `appID` if it was read less than `timeToLive` ago.
    func type(_ key: String, appID: RaveID) -> GiftTypeRecord? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[Key(appID: appID, key: key)], now - entry.readAt < timeToLive else { return nil }
            return entry.type
        }
    }

    /// Remembers `type` as just read (or just written).
    func remember(_ type: GiftTypeRecord) {
        let now = ContinuousClock.now
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[Key(appID: type.appID, key: type.key)] = Entry(type: type, readAt: now)
        }
    }
}
