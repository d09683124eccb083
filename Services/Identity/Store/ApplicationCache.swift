import Foundation
import RavePostgres
import RaveRPC
import RaveRuntime
import Synchronization

/// Applications as recently read, so logins do not spend a query on settings that almost never change.
///
/// An entry lives `lifetime` seconds; updates through this process replace it at once, other replicas see them
/// when their entry expires. Unknown applications are not cached, so a new app works on every replica at once.
final class ApplicationCache: Sendable {
    private let pool: PostgresPool
    private let lifetime: Duration
    private let entries = Mutex(ExpiringMap<RaveID, ApplicationRecord>(capacity: 10_000))

    init(pool: PostgresPool, lifetime: Duration = .seconds(5)) {
        self.pool = pool
        self.lifetime = lifetime
    }

    /// The application, from the cache while its entry is fresh, else from the database; NOT_FOUND naming it.
    func application(_ id: RaveID) async throws -> ApplicationRecord {
        let now = ContinuousClock.now
        if let cached = entries.withLock({ $0.value(for: id, at: now) }) { return cached }
        let record = try await ApplicationStore(database: pool).application(id)
        remember(record)
        return record
    }

    /// Stores a record just read or written, replacing an older one.
    func remember(_ record: ApplicationRecord) {
        let now = ContinuousClock.now
        entries.withLock { $0.insert(record, for: record.id, until: now + lifetime, now: now) }
    }
}
