import Foundation
import RavePostgres
import RaveRPC
import Synchronization

/// Applications as recently read, so logins do not spend a query on settings that almost never change.
///
/// An entry lives `lifetime` seconds; updates through this process replace it at once, other replicas see them
/// when their entry expires. Unknown applications are not cached, so a new app works on every replica at once.
final class ApplicationCache: Sendable {
    private struct Entry {
        var record: ApplicationRecord
        var expiresAt: ContinuousClock.Instant
    }

    private let pool: PostgresPool
    private let lifetime: Duration
    private let entries = Mutex<[RaveID: Entry]>([:])

    init(pool: PostgresPool, lifetime: Duration = .seconds(5)) {
        self.pool = pool
        self.lifetime = lifetime
    }

    /// The application, from the cache while its entry is fresh, else from the database; NOT_FOUND naming it.
    func application(_ id: RaveID) async throws -> ApplicationRecord {
        let now = ContinuousClock.now
        if let cached = entries.withLock({ $0[id] }), cached.expiresAt > now { return cached.record }
        let record = try await ApplicationStore(database: pool).application(id)
        remember(record)
        return record
    }

    /// Stores a record just read or written, replacing an older one.
    func remember(_ record: ApplicationRecord) {
        let entry = Entry(record: record, expiresAt: ContinuousClock.now + lifetime)
        entries.withLock { entries in
            // Expired entries go when the cache grows, so apps no longer played do not stay forever.
            if entries.count >= 10_000 {
                let now = ContinuousClock.now
                entries = entries.filter { $0.value.expiresAt > now }
            }
            entries[record.id] = entry
        }
    }
}
