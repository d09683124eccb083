import RavePostgres
import RaveRuntime
import RaveTelemetry
import RaveTransport
import Synchronization

/// Every user's friend ids per list, kept in memory so `FriendIds` (leaderboards asks it for every friends page)
/// costs no database round trip.
///
/// **Invalidation.** Every transaction that changes friend edges (accept, remove, block, merge) also runs
/// `pg_notify('social_friends', <owner>)` for each user whose friends changed (`*` for a merge, which touches too
/// many to name). PostgreSQL delivers the notification only after the commit, to every replica's listener, so a
/// replica drops the entry as soon as the change is visible; the writing replica also drops it before answering,
/// so a player reads their own writes. Chosen over a version check because that costs a round trip per call, the
/// very cost the cache removes; the price is that another replica may answer from the old list for the few
/// milliseconds a notification takes to arrive.
///
/// **Missed notifications.** A notification is lost when the listener's connection breaks, so an entry is served
/// only while the listener is on the connection it was filled under (`PostgresListener.listeningGeneration`):
/// a broken connection disables the cache at once, and the first lookup after the reconnect empties it. A fill
/// that a notification for its user overtakes is not stored. Entries also expire after `maxAge`, a bound for the
/// one case nothing detects (a connection that hangs without breaking).
///
/// **Size.** At most `capacity` ids (16 bytes each) are held; past it, arbitrary entries are evicted.
final class FriendIDCache: Service {
    /// What a list lookup found and what to do next.
    enum Lookup: Sendable {
        /// Friend ids from memory.
        case hit([RaveID])
        /// Load from the database, then offer the result with `store`.
        case miss(Ticket)
        /// The cache is not listening: load from the database and keep nothing.
        case bypass
    }

    /// Identifies one fill, so that a notification arriving while it runs can void it.
    struct Ticket: Sendable {
        fileprivate var key: Key
        fileprivate var number: UInt64
        fileprivate var generation: UInt64
    }

    fileprivate struct Key: Hashable, Sendable {
        var listID: Int64
        var owner: RaveID
    }

    private struct Entry {
        var ids: [RaveID]
        var filledAt: ContinuousClock.Instant
    }

    private struct State {
        /// Entries by owner, then list: a notification names an owner, for every list.
        var entries: [RaveID: [Int64: Entry]] = [:]
        var storedIDs = 0
        var pendingFills: [Key: UInt64] = [:]
        var nextTicket: UInt64 = 0
        /// The listener generation the entries were filled under; nil until the listener first listens.
        var generation: UInt64?
        /// Set while `run()` listens.
        var listener: PostgresListener?

        mutating func remove(owner: RaveID, listID: Int64? = nil) {
            if let listID {
                guard let removed = entries[owner]?.removeValue(forKey: listID) else { return }
                storedIDs -= removed.ids.count
                if entries[owner]?.isEmpty == true { entries[owner] = nil }
            } else if let removed = entries.removeValue(forKey: owner) {
                storedIDs -= removed.values.reduce(0) { $0 + $1.ids.count }
            }
        }

        mutating func clear() {
            entries = [:]
            storedIDs = 0
            pendingFills = [:]
        }
    }

    /// The NOTIFY channel friendship writes signal on.
    static let channel = "social_friends"
    /// The payload that empties every cache (merges).
    static let everyone = "*"

    let capacity: Int
    let maxAge: Duration
    private let connectionString: String
    private let loop: EventLoop
    private let logger: Logger
    private let state = Mutex(State())
    private let stopped = ShutdownLatch()

    var name: String { "friend-id-cache" }

    init(pool: PostgresPool, loop: EventLoop, capacity: Int, maxAge: Duration, logger: Logger) {
        self.capacity = capacity
        self.maxAge = maxAge
        self.loop = loop
        self.logger = logger.with("task", "friend-id-cache")
        connectionString = pool.configuration.connectionString
    }

    // MARK: - Lookups

    /// The cached friend ids of `owner` in a list, or what to do without them.
    func lookup(listID: Int64, owner: RaveID) -> Lookup {
        let generation = state.withLock { $0.listener }?.listeningGeneration
        let now = ContinuousClock.now
        return state.withLock { state in
            guard state.listener != nil, let generation else { return .bypass }
            if state.generation != generation {
                // A new connection: anything may have changed while no one listened.
                state.clear()
                state.generation = generation
            }
            let key = Key(listID: listID, owner: owner)
            if let entry = state.entries[owner]?[listID] {
                if now - entry.filledAt < maxAge { return .hit(entry.ids) }
                state.remove(owner: owner, listID: listID)
            }
            state.nextTicket += 1
            state.pendingFills[key] = state.nextTicket
            return .miss(Ticket(key: key, number: state.nextTicket, generation: generation))
        }
    }

    /// Keeps ids read from the database, unless the owner's friends changed (or the listener broke) meanwhile.
    func store(_ ids: [RaveID], for ticket: Ticket) {
        let stillListening = state.withLock { $0.listener }?.listeningGeneration == ticket.generation
        let now = ContinuousClock.now
        state.withLock { state in
            guard state.pendingFills[ticket.key] == ticket.number else { return }
            state.pendingFills[ticket.key] = nil
            guard stillListening, state.generation == ticket.generation, ids.count <= capacity else { return }
            while state.storedIDs + ids.count > capacity, let owner = state.entries.keys.first {
                state.remove(owner: owner)
            }
            state.entries[ticket.key.owner, default: [:]][ticket.key.listID] = Entry(ids: ids, filledAt: now)
            state.storedIDs += ids.count
        }
    }

    /// Forgets a fill that failed.
    func abandon(_ ticket: Ticket) {
        state.withLock { state in
            if state.pendingFills[ticket.key] == ticket.number { state.pendingFills[ticket.key] = nil }
        }
    }

    /// The friend ids of `owner` in a list, from memory or from `load`.
    func friendIDs(listID: Int64, owner: RaveID, load: () async throws -> [RaveID]) async throws -> [RaveID] {
        switch lookup(listID: listID, owner: owner) {
        case .hit(let ids): return ids
        case .bypass: return try await load()
        case .miss(let ticket):
            do {
                let ids = try await load()
                store(ids, for: ticket)
                return ids
            } catch {
                abandon(ticket)
                throw error
            }
        }
    }

    // MARK: - Invalidation

    /// Drops the entries (every list) of users whose friends changed, and voids fills under way for them.
    func invalidate(_ owners: some Sequence<RaveID>) {
        state.withLock { state in
            for owner in owners {
                state.remove(owner: owner)
                if !state.pendingFills.isEmpty {
                    state.pendingFills = state.pendingFills.filter { $0.key.owner != owner }
                }
            }
        }
    }

    /// Drops everything.
    func invalidateAll() {
        state.withLock { $0.clear() }
    }

    /// Whether lookups may be answered from memory (the listener is on a connection that listens).
    var isListening: Bool { state.withLock { $0.listener }?.listeningGeneration != nil }

    /// How many ids are held, for tests and metrics.
    var storedIDs: Int { state.withLock { $0.storedIDs } }

    // MARK: - Service

    /// Listens for friendship changes until shut down; the cache serves entries only while this runs.
    ///
    /// Until the first LISTEN succeeds every call goes to the database; the attempts repeat with a growing pause.
    func run() async throws {
        var pause = Duration.milliseconds(100)
        while !stopped.isOpen {
            let listener = PostgresListener(connectionString: connectionString, loop: loop, logger: logger)
            let notifications: AsyncStream<PostgresNotification>
            do {
                notifications = try await listener.notifications(channel: Self.channel)
            } catch {
                // A failed first LISTEN leaves nothing to reuse: the next attempt starts a fresh listener.
                listener.shutdown()
                logger.warning(
                    "cannot listen for friendship changes; FriendIds reads the database", [("error", "\(error)")])
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
                continue
            }
            let consumer = Task {
                for await notification in notifications { self.apply(notification.payload) }
            }
            state.withLock { $0.listener = listener }
            await stopped.wait()
            state.withLock { state in
                state.listener = nil
                state.clear()
            }
            listener.shutdown()
            await consumer.value
        }
    }

    func shutdown() async {
        stopped.open()
    }

    private func apply(_ payload: String) {
        if payload == Self.everyone {
            invalidateAll()
            return
        }
        let owners = payload.split(separator: ",").compactMap { RaveID($0) }
        if owners.isEmpty {
            logger.warning("unreadable friends notification", [("payload", payload)])
            invalidateAll()
        } else {
            invalidate(owners)
        }
    }
}
