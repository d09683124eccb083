import RavePostgres

/// What one process knows of `merged_users`: which ids were merged away and into whom, and which were not.
///
/// A pure state machine (the clock and the listener's generation are passed in), kept behind a lock by
/// `MergedUsers`. Two kinds of answers are held:
///
/// - **merged** (source → target): true forever, since a merge is never undone. The target may itself be merged
///   later (a chain), so resolution looks the target up again.
/// - **not merged**: true only until a merge of that id commits. Such an answer is served only while the
///   listener is on the connection it was read under (a merge committed meanwhile would have been announced on
///   it), and only for `maxAge`, a bound for the one failure nothing detects: a connection that hangs without
///   breaking.
///
/// A database read that a merge of the same id overtakes must not store its "not merged": each read takes a ticket,
/// and learning of a merge voids the tickets of its source.
///
/// **The whole table.** Merges are rare next to players, so a process normally holds every merged id: a read of the
/// whole table under the listener's connection (`beginTableRead`, `storeTable`) makes the cache *complete*, and then
/// any id it does not hold as merged is not merged, with no read and no entry. Completeness follows the rules of a
/// "not merged" answer: it lasts while the same connection listens and for `maxAge`, and a table larger than
/// `capacity` is not held whole.
///
/// It also holds the ids this process knows were erased (account deletions), so calls naming them are refused;
/// bounded like the rest, the oldest forgotten first.
struct MergedUserCache {
    /// What the cache says about one id.
    enum Answer: Equatable, Sendable {
        case merged(into: RaveID)
        case notMerged
    }

    /// The outcome of a look-up.
    enum Lookup: Equatable {
        case hit(Answer)
        /// Read the database, then offer the answer with `store(_:for:generation:now:)`.
        case miss(Ticket)
        /// Not listening: read the database and keep nothing.
        case bypass
    }

    /// Identifies one database read, so that a merge learned while it runs can void it.
    struct Ticket: Equatable {
        fileprivate var id: RaveID
        fileprivate var number: UInt64
        fileprivate var generation: UInt64
    }

    /// Identifies one read of the whole table: what it finds is complete only for the connection it started under.
    struct TableTicket: Equatable {
        fileprivate var generation: UInt64
        fileprivate(set) var startedAt: ContinuousClock.Instant
    }

    /// When the cache holds every merged id: the listener generation and the start of the read that made it so.
    private struct Completeness {
        var generation: UInt64
        var since: ContinuousClock.Instant
    }

    private struct Entry {
        var answer: Answer
        var storedAt: ContinuousClock.Instant
    }

    let capacity: Int
    let maxAge: Duration
    private var entries: [RaveID: Entry] = [:]
    private var pendingReads: [RaveID: UInt64] = [:]
    private var nextTicket: UInt64 = 0
    /// The listener generation the "not merged" answers were read under.
    private var generation: UInt64?
    private var erased = RecentSet(capacity: 10_000)
    private var completeness: Completeness?

    init(capacity: Int, maxAge: Duration) {
        self.capacity = capacity
        self.maxAge = maxAge
    }

    /// How many ids are held.
    var count: Int { entries.count }

    /// What is known about `id`; `listening` is the listener's current generation (nil while it is down).
    mutating func lookup(_ id: RaveID, listening: UInt64?, now: ContinuousClock.Instant) -> Lookup {
        if let listening, generation != listening {
            // A new connection: merges may have committed unannounced while nobody listened.
            forgetUnmerged()
            generation = listening
        }
        if let entry = entries[id] {
            switch entry.answer {
            case .merged: return .hit(entry.answer)
            case .notMerged:
                if listening != nil, now - entry.storedAt < maxAge { return .hit(.notMerged) }
                entries[id] = nil
            }
        }
        guard let listening else { return .bypass }
        if isComplete(listening: listening, now: now) { return .hit(.notMerged) }
        nextTicket += 1
        pendingReads[id] = nextTicket
        return .miss(Ticket(id: id, number: nextTicket, generation: listening))
    }

    /// Whether `id` is held as not merged and may be served so (no ticket is taken when it is not).
    func isKnownUnmerged(_ id: RaveID, listening: UInt64, now: ContinuousClock.Instant) -> Bool {
        guard generation == listening, !erased.contains(id) else { return false }
        guard let entry = entries[id] else { return isComplete(listening: listening, now: now) }
        return entry.answer == .notMerged && now - entry.storedAt < maxAge
    }

    /// The account `id` is now, from memory alone.
    ///
    /// Nil when only the database can tell, or when `id` or the account it was merged into was erased. Follows at
    /// most `maximumHops` merges.
    func resolveFromMemory(
        _ id: RaveID, listening: UInt64?, now: ContinuousClock.Instant, maximumHops: Int
    ) -> RaveID? {
        var current = id
        for _ in 0...maximumHops {
            guard !erased.contains(current) else { return nil }
            if case .merged(let target) = entries[current]?.answer {
                current = target
                continue
            }
            guard let listening, isKnownUnmerged(current, listening: listening, now: now) else { return nil }
            return current
        }
        return nil
    }

    /// Whether every merged id is held, under the connection `listening` now.
    private func isComplete(listening: UInt64, now: ContinuousClock.Instant) -> Bool {
        guard let completeness, completeness.generation == listening, generation == listening else { return false }
        return now - completeness.since < maxAge
    }

    /// How old the table read that made the cache complete is; nil when it is not complete under `listening`.
    func completeAge(listening: UInt64?, now: ContinuousClock.Instant) -> Duration? {
        guard let listening, isComplete(listening: listening, now: now), let completeness else { return nil }
        return now - completeness.since
    }

    /// Starts a read of the whole table under the connection `listening` now.
    mutating func beginTableRead(listening: UInt64, now: ContinuousClock.Instant) -> TableTicket {
        if generation != listening {
            forgetUnmerged()
            generation = listening
        }
        return TableTicket(generation: listening, startedAt: now)
    }

    /// Keeps every merge a whole-table read found, and makes the cache complete unless the listener changed since
    /// the read started or the table does not fit; `listening` is the listener's generation now.
    mutating func storeTable(
        _ merges: [(source: RaveID, target: RaveID)], for ticket: TableTicket, listening: UInt64?,
        now: ContinuousClock.Instant
    ) {
        guard merges.count <= capacity else { return }
        for merge in merges {
            pendingReads[merge.source] = nil
            insert(.merged(into: merge.target), for: merge.source, now: now)
        }
        guard listening == ticket.generation, generation == ticket.generation else { return }
        if let completeness, completeness.generation == ticket.generation, completeness.since > ticket.startedAt {
            return
        }
        completeness = Completeness(generation: ticket.generation, since: ticket.startedAt)
    }

    /// Keeps what a database read found, unless a merge of the id was learned (or the listener changed) since the
    /// ticket was taken; `listening` is the listener's generation now.
    mutating func store(_ answer: Answer, for ticket: Ticket, listening: UInt64?, now: ContinuousClock.Instant) {
        guard pendingReads[ticket.id] == ticket.number else { return }
        pendingReads[ticket.id] = nil
        if case .merged = answer {
            // True whatever happened meanwhile.
            insert(answer, for: ticket.id, now: now)
            return
        }
        guard listening == ticket.generation, generation == ticket.generation else { return }
        insert(answer, for: ticket.id, now: now)
    }

    /// Forgets a read that failed.
    mutating func abandon(_ ticket: Ticket) {
        if pendingReads[ticket.id] == ticket.number { pendingReads[ticket.id] = nil }
    }

    /// Records a merge (from this process's own MergeUsers, a notification, or a catch-up read): `source` now
    /// resolves to `target`, and reads of `source` under way are void.
    mutating func learn(source: RaveID, target: RaveID, now: ContinuousClock.Instant) {
        pendingReads[source] = nil
        insert(.merged(into: target), for: source, now: now)
    }

    /// Records that `id` was erased: calls naming it are refused from now on.
    mutating func markErased(_ id: RaveID) {
        erased.insert(id)
    }

    /// Whether `id` was erased (as far as this process remembers).
    func isErased(_ id: RaveID) -> Bool { erased.contains(id) }

    /// Drops every "not merged" answer (merges may have been missed); merged answers stay true.
    mutating func forgetUnmerged() {
        entries = entries.filter { $0.value.answer != .notMerged }
        pendingReads = [:]
    }

    private mutating func insert(_ answer: Answer, for id: RaveID, now: ContinuousClock.Instant) {
        if entries[id] == nil, entries.count >= capacity {
            // Full: drop "not merged" answers first (they are re-read cheaply), then arbitrary ones.
            let unmerged = entries.lazy.filter { $0.value.answer == .notMerged }.prefix(max(1, capacity / 4))
                .map(\.key)
            for key in Array(unmerged) { entries[key] = nil }
            while entries.count >= capacity, let key = entries.keys.first {
                // A merged id forgotten: absence no longer means "not merged".
                completeness = nil
                entries[key] = nil
            }
        }
        entries[id] = Entry(answer: answer, storedAt: now)
    }
}
