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
        nextTicket += 1
        pendingReads[id] = nextTicket
        return .miss(Ticket(id: id, number: nextTicket, generation: listening))
    }

    /// Whether `id` is held as not merged and may be served so (no ticket is taken when it is not).
    func isKnownUnmerged(_ id: RaveID, listening: UInt64, now: ContinuousClock.Instant) -> Bool {
        guard generation == listening, !erased.contains(id), let entry = entries[id], entry.answer == .notMerged else {
            return false
        }
        return now - entry.storedAt < maxAge
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
            while entries.count >= capacity, let key = entries.keys.first { entries[key] = nil }
        }
        entries[id] = Entry(answer: answer, storedAt: now)
    }
}
