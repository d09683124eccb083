import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport
import Synchronization

/// A data service's record of merged-away users, and the one place its handlers turn an id into the account it
/// now is (DESIGN.md §7: "the source's Rave ID resolves to the target forever").
///
/// **Recording.** A participant's `MergeUsers` calls `redirect` before its transaction and `record` inside it: the
/// row `merged_users(source → target)` commits with the moved data, and a NOTIFY on `merged_users` announces it
/// to every replica of the service.
///
/// **Resolving.** `resolve` answers from memory (`MergedUserCache`): a merge is true forever; "not merged" is held
/// only while the listener is connected (a merge would have been announced). Once listening, the process reads the
/// whole table (again before `maxAge` passes), and while it holds every merge any other id is not merged without a
/// read; when the table is larger than `capacity`, ids are read from the database on a miss, one statement for all
/// the ids of a call and for the misses of calls running meanwhile. Without a listener every resolution reads the
/// database. `resolveKnown` is the same answer without suspending, for fast paths on the event loop.
///
/// **Nothing written under an old id is lost.** A call may resolve the source just before the redirect and write
/// under it just after the merge moved the source's rows. So:
/// - the replica that runs `MergeUsers` redirects first, then waits until every call that started before the
///   redirect has finished (`CallTracker`, which counts the calls of the services passed through `track`), and
///   only then moves the rows: every earlier write is in them, and every later call resolves to the target;
/// - every other replica, on the notification (or, when its listener reconnects or starts, for the merges of the
///   last `catchUpWindow` it may have missed), redirects, waits for its own earlier calls in the same way and then
///   runs the service's `sweep(source, target)`: the merge's moves again, which take whatever such a call wrote
///   under the source. Other replicas follow a merge within the notification's delay (milliseconds); until then
///   they may read the source's (emptied) data, never lose a write.
public final class MergedUsers: Service {
    /// Moves whatever `source` still holds to `target`, as a merge does; must be safe to repeat.
    public typealias Sweep = @Sendable (_ source: RaveID, _ target: RaveID) async throws -> Void

    /// Tunables with the defaults the services use.
    public struct Configuration: Sendable {
        /// Ids held in memory (merged and not merged answers together); a table with more merges is not held whole.
        public var capacity = 500_000
        /// How long a "not merged" answer is served without reading the database again.
        public var maxAge: Duration = .seconds(600)
        /// How long a merge waits for earlier calls to finish before moving the rows anyway (then logged).
        public var drainTimeout: Duration = .seconds(30)
        /// At start-up and after the listener reconnects, merges recorded this long before the break (or before
        /// start-up) are swept again, for writes of calls a crashed or deaf replica left behind.
        public var catchUpWindow: Duration = .seconds(60)
        /// Chain hops followed in memory before giving up (the table itself is always one hop).
        public var maximumHops = 8

        public init() {}
    }

    let configuration: Configuration
    let pool: PostgresPool
    private let loop: EventLoop?
    let logger: Logger
    let cache: Mutex<MergedUserCache>
    private let calls = CallTracker()
    private let sweep = Mutex<Sweep?>(nil)
    let erasureSweep = Mutex<ErasureSweep?>(nil)
    private let listener = Mutex<PostgresListener?>(nil)
    /// Single-id resolutions waiting for a shared read (`resolveWithOthers`).
    let misses = Mutex(Misses())
    /// Sources (and erased users) whose writes this process has accounted for (merged, erased here or swept);
    /// bounded, oldest dropped first.
    let settled = Mutex(RecentSet(capacity: 10_000))
    let stopped = ShutdownLatch()

    struct Misses {
        var ids: [RaveID] = []
        var waiters: [CheckedContinuation<RaveID, any Error>] = []
        /// Ids in the read that runs; 0 when none does.
        var reading = 0
    }

    public var name: String { "merged-users" }

    /// `loop` runs the listener; without one (tools, tests that build handlers alone) nothing listens and every
    /// resolution reads the database.
    public init(pool: PostgresPool, loop: EventLoop?, logger: Logger, configuration: Configuration = Configuration()) {
        self.pool = pool
        self.loop = loop
        self.logger = logger.with("component", "merged-users")
        self.configuration = configuration
        cache = Mutex(MergedUserCache(capacity: configuration.capacity, maxAge: configuration.maxAge))
    }

    /// Sets what other replicas' merges run here (`run` calls it); set once, by the service that owns the data.
    public func onSweep(_ body: @escaping Sweep) {
        sweep.withLock { $0 = body }
    }

    // MARK: - Resolving

    /// The account `id` is now: its merge target (at the end of a chain), or itself; `ErasureError.erased` when
    /// this process erased it (or the account it was merged into).
    public func resolve(_ id: RaveID) async throws -> RaveID {
        // The common case, without the arrays of the general path: an id memory answers.
        if let known = resolveKnown(id) { return known }
        let resolved = try await resolveWithOthers(id)
        if cache.withLock({ $0.isErased(id) || $0.isErased(resolved) }) { throw ErasureError.erased }
        return resolved
    }

    /// What `resolve` would answer, from memory alone, without suspending.
    ///
    /// Nil when the database must be read or when the id (or the account it was merged into) was erased. Fast paths
    /// that answer on the event loop use it and fall back to `resolve` on nil.
    public func resolveKnown(_ id: RaveID) -> RaveID? {
        let listening = listener.withLock { $0 }?.listeningGeneration
        let now = ContinuousClock.now
        return cache.withLock {
            $0.resolveFromMemory(id, listening: listening, now: now, maximumHops: configuration.maximumHops)
        }
    }

    /// Whether every merged id is held in memory (read whole under the listening connection), for tests.
    public var holdsEveryMerge: Bool {
        let listening = listener.withLock { $0 }?.listeningGeneration
        return cache.withLock { $0.completeAge(listening: listening, now: .now) } != nil
    }

    /// `resolve([id])`, read together with the misses of concurrent calls: the first miss starts a read at once,
    /// those that arrive while it runs share the next one (one statement for a burst of new players instead of one
    /// each).
    private func resolveWithOthers(_ id: RaveID) async throws -> RaveID {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<RaveID, any Error>) in
            let startsRead = misses.withLock { misses -> Bool in
                misses.ids.append(id)
                misses.waiters.append(continuation)
                guard misses.reading == 0 else { return false }
                misses.reading = 1
                return true
            }
            // Unowned on purpose, and bounded: it runs only while callers wait on it and ends when none is queued.
            if startsRead { Task { await self.readMissesUntilIdle() } }
        }
    }

    private func readMissesUntilIdle() async {
        while true {
            let (ids, waiters) = misses.withLock { misses -> ([RaveID], [CheckedContinuation<RaveID, any Error>]) in
                misses.reading = misses.ids.count
                guard !misses.ids.isEmpty else { return ([], []) }
                defer {
                    misses.ids = []
                    misses.waiters = []
                }
                return (misses.ids, misses.waiters)
            }
            guard !waiters.isEmpty else { return }
            do {
                let resolved = try await resolve(ids)
                for (waiter, target) in zip(waiters, resolved) { waiter.resume(returning: target) }
            } catch {
                for waiter in waiters { waiter.resume(throwing: error) }
            }
        }
    }

    /// `resolve` for each id, in order, with at most one database read per hop for all of them; erased ids stay
    /// as they are (`withoutErased` drops them).
    public func resolve(_ ids: [RaveID]) async throws -> [RaveID] {
        var resolved = ids
        var open = Array(ids.indices)
        for _ in 0..<configuration.maximumHops {
            guard !open.isEmpty else { return resolved }
            let listening = listener.withLock { $0 }?.listeningGeneration
            let now = ContinuousClock.now
            var unknown: [RaveID: MergedUserCache.Lookup] = [:]
            var next: [Int] = []
            cache.withLock { cache in
                for index in open {
                    let id = resolved[index]
                    if unknown[id] != nil {
                        // Asked twice in one call: one read answers both (a second ticket would void the first).
                        next.append(index)
                        continue
                    }
                    let lookup = cache.lookup(id, listening: listening, now: now)
                    switch lookup {
                    case .hit(.notMerged): break
                    case .hit(.merged(let target)):
                        resolved[index] = target
                        next.append(index)
                    case .miss, .bypass:
                        unknown[id] = lookup
                        next.append(index)
                    }
                }
            }
            guard !unknown.isEmpty else {
                open = next
                continue
            }
            let found = try await read(unknown)
            open = []
            for index in next {
                if unknown[resolved[index]] != nil {
                    // Read just now: the table's targets are final, so this id is done.
                    resolved[index] = found[resolved[index]] ?? resolved[index]
                } else {
                    open.append(index)
                }
            }
        }
        guard open.isEmpty else {
            throw PostgresError(.client, "merged_users holds a chain longer than \(configuration.maximumHops) hops")
        }
        return resolved
    }

    /// Reads the targets of `lookups`' ids and offers the answers to the cache.
    private func read(_ lookups: [RaveID: MergedUserCache.Lookup]) async throws -> [RaveID: RaveID] {
        let ids = Array(lookups.keys)
        let rows: PostgresRows
        do {
            rows = try await pool.execute(MergedUsersStore.lookup, [PostgresArrayParameter(ids)])
        } catch {
            cache.withLock { cache in
                for case .miss(let ticket) in lookups.values { cache.abandon(ticket) }
            }
            throw error
        }
        var found: [RaveID: RaveID] = [:]
        for row in rows {
            found[try row.decode(RaveID.self, at: 0)] = try row.decode(RaveID.self, at: 1)
        }
        let listening = listener.withLock { $0 }?.listeningGeneration
        let now = ContinuousClock.now
        cache.withLock { cache in
            for case (let id, .miss(let ticket)) in lookups {
                let answer: MergedUserCache.Answer = found[id].map { .merged(into: $0) } ?? .notMerged
                cache.store(answer, for: ticket, listening: listening, now: now)
            }
        }
        return found
    }

    // MARK: - Merging

    /// Before a merge's transaction: `source` resolves to `target` from now on in this process, and this returns
    /// once every call that started earlier has finished (or the drain timeout passed, which is logged).
    public func redirect(source: RaveID, target: RaveID) async {
        let now = ContinuousClock.now
        cache.withLock { $0.learn(source: source, target: target, now: now) }
        // Settled here unless a call outlived the drain: then the merge's own announcement queues a sweep, which
        // waits for that call again before moving what it wrote.
        if await drain(source: source) { settled.withLock { $0.insert(source) } }
    }

    /// Inside the merge's transaction: records `source` → `target` and announces it after the commit; returns the
    /// target rows should move to (the end of `target`'s own chain, normally `target` itself).
    @discardableResult
    public func record(
        mergeID: String, source: RaveID, target: RaveID, in transaction: PostgresTransaction
    ) async throws -> RaveID {
        let rows = try await transaction.execute(MergedUsersStore.record, [mergeID, source, target])
        guard let row = rows.first, let final = try row.decode(RaveID?.self, at: 0) else {
            throw PostgresError(.client, "recording the merge of \(source.hex) returned no target")
        }
        if final != target {
            let now = ContinuousClock.now
            cache.withLock { $0.learn(source: source, target: final, now: now) }
        }
        return final
    }

    /// The ids merged into `target` (every source that resolves to it), for reads that unite their history.
    public func sources(of target: RaveID, on database: some PostgresQueryable) async throws -> [RaveID] {
        try await database.execute(MergedUsersStore.sources, [target]).map { try $0.decode(RaveID.self, at: 0) }
    }

    /// Wraps `service` so its calls count for the drain; every service that resolves ids must be passed through
    /// this (the merge participant itself must not).
    public func track<Base: RPCService>(_ service: Base) -> any RPCService {
        TrackedService(service, calls: calls)
    }

    /// Runs `body` as a tracked call (for work that resolves ids outside an RPC service, and tests that call
    /// handlers directly).
    public func tracking<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        let epoch = calls.begin()
        defer { calls.end(epoch) }
        return try await body()
    }

    /// Runs `body` while this instance listens (as the service's background service would), for tools and tests;
    /// the listener stops afterwards.
    public func listening<Result>(_ body: () async throws -> Result) async throws -> Result {
        let running = Task { try await run() }
        let result: Result
        do {
            _ = await waitUntilListening()
            result = try await body()
        } catch {
            await shutdown()
            _ = await running.result
            throw error
        }
        await shutdown()
        _ = await running.result
        return result
    }

    /// Whether "not merged" answers are served from memory (the listener is on a connection that listens).
    public var isListening: Bool { listener.withLock { $0 }?.listeningGeneration != nil }

    /// Waits until `isListening` (true) or `timeout` passed (false): benchmarks and tests start measuring then.
    public func waitUntilListening(timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !isListening {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Calls of tracked services being served, for tests.
    public var runningCalls: Int { calls.runningCalls }

    /// Waits for the calls that started before now; false (logged) when one outlived the drain timeout.
    @discardableResult
    func drain(source: RaveID) async -> Bool {
        if await calls.drain(timeout: configuration.drainTimeout) { return true }
        logger.warning(
            "calls that started before a merge are still running; moving the rows now and sweeping again later",
            [("source", source.hex), ("timeout", "\(configuration.drainTimeout)")])
        return false
    }

    // MARK: - Other replicas' merges

    /// Listens for merges until shut down, sweeping those other replicas recorded.
    public func run() async throws {
        guard let loop else {
            await stopped.wait()
            return
        }
        var pause = Duration.milliseconds(100)
        while !stopped.isOpen {
            let listener = PostgresListener(
                connectionString: pool.configuration.connectionString, loop: loop, logger: logger)
            let notifications: AsyncStream<PostgresNotification>
            do {
                notifications = try await listener.notifications(channel: MergedUsersStore.channel)
            } catch {
                listener.shutdown()
                logger.warning("cannot listen for merges; ids are resolved from the database", [("error", "\(error)")])
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
                continue
            }
            pause = .milliseconds(100)
            self.listener.withLock { $0 = listener }
            let (sweeps, queue) = AsyncStream.makeStream(of: Announcement.self)
            let consumer = Task {
                for await notification in notifications {
                    if let erased = Self.parseErasure(notification.payload) {
                        self.markErased(erased)
                        queue.yield(.erasure(erased))
                        continue
                    }
                    guard let (source, target) = Self.parse(notification.payload) else {
                        self.logger.warning("unreadable merge notification", [("payload", notification.payload)])
                        continue
                    }
                    self.learn(source: source, target: target, queue: queue)
                }
            }
            let sweeper = Task {
                for await announcement in sweeps {
                    switch announcement {
                    case .merge(let source, let target): await self.sweep(source, into: target)
                    case .erasure(let ids): await self.sweepErasure(ids)
                    }
                }
            }
            let watcher = Task { await self.catchUp(listener: listener, queue: queue) }
            await stopped.wait()
            self.listener.withLock { $0 = nil }
            listener.shutdown()
            await consumer.value
            watcher.cancel()
            await watcher.value
            queue.finish()
            await sweeper.value
        }
    }

    public func shutdown() async {
        stopped.open()
    }

    /// What the listener hears: a merge, or an erasure (the user first, then the ids merged into it).
    enum Announcement {
        case merge(RaveID, RaveID)
        case erasure([RaveID])
    }

    /// Takes in a merge another replica (or this one) recorded; queues a sweep unless this process settled it.
    private func learn(source: RaveID, target: RaveID, queue: AsyncStream<Announcement>.Continuation) {
        let now = ContinuousClock.now
        cache.withLock { $0.learn(source: source, target: target, now: now) }
        if settled.withLock({ !$0.contains(source) }) { queue.yield(.merge(source, target)) }
    }

    /// Waits for earlier calls (a call stuck past several drain timeouts is given up on, logged), then runs the
    /// service's sweep until it succeeds (or the process stops).
    private func sweep(_ source: RaveID, into target: RaveID) async {
        guard settled.withLock({ !$0.contains(source) }), let body = sweep.withLock({ $0 }) else { return }
        for _ in 0..<Self.sweepDrainAttempts where !stopped.isOpen {
            if await drain(source: source) { break }
        }
        var pause = Duration.milliseconds(50)
        while !stopped.isOpen {
            do {
                try await body(source, target)
                settled.withLock { $0.insert(source) }
                logger.info("swept a merge recorded elsewhere", [("source", source.hex), ("target", target.hex)])
                return
            } catch {
                logger.warning("sweeping a merge failed; retrying", [("source", source.hex), ("error", "\(error)")])
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }

    /// At every new listening connection (the first included), reads the merges of the time nobody listened plus
    /// `catchUpWindow`, and learns them (queuing sweeps for those not settled here).
    private func catchUp(listener: PostgresListener, queue: AsyncStream<Announcement>.Continuation) async {
        var seen: UInt64?
        var lastListening = ContinuousClock.now
        var nextTableRead = ContinuousClock.now
        while !Task.isCancelled {
            let generation = listener.listeningGeneration
            if let generation, generation != seen {
                let window = ContinuousClock.now - lastListening + configuration.catchUpWindow
                do {
                    let rows = try await pool.execute(
                        MergedUsersStore.recent, [Int64(window.components.seconds * 1000 + 1000)])
                    for row in rows {
                        learn(
                            source: try row.decode(RaveID.self, at: 0), target: try row.decode(RaveID.self, at: 1),
                            queue: queue)
                    }
                    seen = generation
                    nextTableRead = .now
                } catch {
                    logger.warning("reading recent merges failed; retrying", [("error", "\(error)")])
                }
            }
            if generation != nil { lastListening = ContinuousClock.now }
            if let generation, generation == seen, ContinuousClock.now >= nextTableRead {
                nextTableRead = await readTable(generation: generation)
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    /// Reads every merge under the listening connection `generation`, so ids not among them are known not merged
    /// (`MergedUserCache`, "The whole table"); returns when to read it again: before the answer ages out, later
    /// when the table is too big to hold, soon after a failure.
    private func readTable(generation: UInt64) async -> ContinuousClock.Instant {
        let ticket = cache.withLock { $0.beginTableRead(listening: generation, now: .now) }
        let merges: [(source: RaveID, target: RaveID)]
        do {
            merges = try await pool.execute(MergedUsersStore.all, [Int64(configuration.capacity + 1)]).map {
                (try $0.decode(RaveID.self, at: 0), try $0.decode(RaveID.self, at: 1))
            }
        } catch {
            logger.warning("reading every merge failed; retrying", [("error", "\(error)")])
            return .now + .seconds(1)
        }
        let listening = listener.withLock { $0 }?.listeningGeneration
        cache.withLock { $0.storeTable(merges, for: ticket, listening: listening, now: .now) }
        if merges.count > configuration.capacity {
            logger.info(
                "more merges than the cache holds; ids are resolved from the database",
                [("capacity", "\(configuration.capacity)")])
        }
        return ticket.startedAt + configuration.maxAge / 2
    }

    /// Drain timeouts a sweep waits through before moving the rows without the calls still running.
    static let sweepDrainAttempts = 10

    /// The ids of an erasure's announcement ("erased <id> <id> …"), nil for any other payload.
    static func parseErasure(_ payload: String) -> [RaveID]? {
        let parts = payload.split(separator: " ")
        guard parts.count >= 2, parts[0] == "erased" else { return nil }
        let ids = parts.dropFirst().compactMap { RaveID($0) }
        return ids.count == parts.count - 1 ? ids : nil
    }

    static func parse(_ payload: String) -> (RaveID, RaveID)? {
        let parts = payload.split(separator: " ")
        guard parts.count == 2, let source = RaveID(parts[0]), let target = RaveID(parts[1]) else { return nil }
        return (source, target)
    }
}

/// A set that keeps only its `capacity` most recent members.
struct RecentSet {
    let capacity: Int
    private var members: Set<RaveID> = []
    private var order: [RaveID] = []
    private var start = 0

    init(capacity: Int) {
        self.capacity = capacity
    }

    func contains(_ id: RaveID) -> Bool { members.contains(id) }

    mutating func insert(_ id: RaveID) {
        guard members.insert(id).inserted else { return }
        order.append(id)
        if members.count > capacity {
            members.remove(order[start])
            start += 1
            if start > capacity {
                order.removeFirst(start)
                start = 0
            }
        }
    }
}
