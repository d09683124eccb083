import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

@testable import RaveMerges

/// `merged_users` as every service's migration creates it.
enum MergedUsersTable {
    static let schema = """
        CREATE TABLE merged_users (
            source_id uuid PRIMARY KEY,
            target_id uuid NOT NULL,
            merge_id text NOT NULL,
            merged_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX merged_users_by_target ON merged_users (target_id);
        CREATE INDEX merged_users_by_time ON merged_users (merged_at);
        """

    /// Runs `body` with a pool on a fresh database holding the table.
    static func with(_ body: (PostgresPool) async throws -> Void) async throws {
        try await ScratchDatabase.with(prefix: "rave_merges_") { url in
            let pool = try ScratchDatabase.pool(url: url)
            defer { pool.shutdown() }
            try await pool.withConnection { try await $0.runScript(schema) }
            try await body(pool)
        }
    }

    static let logger = Logger(label: "merged-users-test", level: .critical)

    /// A listening instance, as a service process runs it; stopped after `body`.
    static func listening(
        _ pool: PostgresPool, _ body: (MergedUsers) async throws -> Void
    ) async throws {
        let merges = MergedUsers(pool: pool, loop: ScratchDatabase.group.next(), logger: logger)
        let running = Task { try await merges.run() }
        do {
            #expect(await merges.waitUntilListening())
            try await body(merges)
        } catch {
            await merges.shutdown()
            _ = await running.result
            throw error
        }
        await merges.shutdown()
        _ = await running.result
    }

    /// Records a merge as a participant does: redirect, then the row in a transaction.
    static func merge(_ source: RaveID, into target: RaveID, by merges: MergedUsers, pool: PostgresPool) async throws {
        await merges.redirect(source: source, target: target)
        try await pool.transaction { transaction in
            try await merges.record(
                mergeID: "m-\(RaveID.random().hex)", source: source, target: target, in: transaction)
        }
    }
}

@Suite("Merged users: recording, resolving, replicas")
struct MergedUsersTests {
    @Test func chainsResolveToTheirEnd() async throws {
        try await MergedUsersTable.with { pool in
            let merges = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
            let (a, b, c, d) = (RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random())
            try await MergedUsersTable.merge(a, into: b, by: merges, pool: pool)
            try await MergedUsersTable.merge(b, into: c, by: merges, pool: pool)
            #expect(try await merges.resolve([a, b, c, d]) == [c, c, c, d])
            // The table itself is one hop for every id, so another process resolves with one read.
            let other = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
            #expect(try await other.resolve([a, b, d, a]) == [c, c, d, c])
            let rows = try await pool.query("SELECT target_id FROM merged_users WHERE source_id = $1", [a])
            #expect(try rows.first?.decode(RaveID.self, at: 0) == c)
            #expect(try await Set(other.sources(of: c, on: pool)) == [a, b])
        }
    }

    @Test func aMergeIntoAMergedTargetLandsOnItsEnd() async throws {
        try await MergedUsersTable.with { pool in
            let merges = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
            let (a, b, c) = (RaveID.random(), RaveID.random(), RaveID.random())
            try await MergedUsersTable.merge(b, into: c, by: merges, pool: pool)
            let final = try await pool.transaction { transaction in
                try await merges.record(mergeID: "late", source: a, target: b, in: transaction)
            }
            #expect(final == c)
            #expect(try await merges.resolve(a) == c)
        }
    }

    @Test func aListeningProcessLearnsMergesFromMemoryAndTheAnnouncement() async throws {
        try await MergedUsersTable.with { pool in
            try await MergedUsersTable.listening(pool) { here in
                let (source, target) = (RaveID.random(), RaveID.random())
                // Known as not merged, from one read.
                #expect(try await here.resolve(source) == source)
                // Another process records the merge: the notification corrects this one's memory.
                let elsewhere = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
                try await MergedUsersTable.merge(source, into: target, by: elsewhere, pool: pool)
                try await eventually { try await here.resolve(source) == target }
            }
        }
    }

    @Test func aListeningProcessHoldsEveryMergeAndAnswersFromMemory() async throws {
        try await MergedUsersTable.with { pool in
            let (earlier, earlierTarget) = (RaveID.random(), RaveID.random())
            let before = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
            try await MergedUsersTable.merge(earlier, into: earlierTarget, by: before, pool: pool)
            // Recorded long ago: beyond the catch-up window, so only the whole-table read can know it.
            _ = try await pool.query(
                "UPDATE merged_users SET merged_at = now() - interval '1 day' WHERE source_id = $1", [earlier])
            try await MergedUsersTable.listening(pool) { here in
                try await eventually { here.holdsEveryMerge }
                let stranger = RaveID.random()
                #expect(here.resolveKnown(stranger) == stranger)
                #expect(here.resolveKnown(earlier) == earlierTarget)
                #expect(try await here.resolve(earlier) == earlierTarget)
                // A merge recorded elsewhere afterwards reaches memory through its announcement.
                let (later, laterTarget) = (RaveID.random(), RaveID.random())
                let elsewhere = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
                try await MergedUsersTable.merge(later, into: laterTarget, by: elsewhere, pool: pool)
                try await eventually { here.resolveKnown(later) == laterTarget }
            }
            // Not listening: memory cannot say an id is not merged.
            let deaf = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
            #expect(deaf.resolveKnown(RaveID.random()) == nil)
        }
    }

    @Test func anotherReplicaSweepsAfterItsOwnEarlierCallsFinished() async throws {
        try await MergedUsersTable.with { pool in
            try await MergedUsersTable.listening(pool) { replica in
                let swept = Mutex<[(RaveID, RaveID, Int)]>([])
                replica.onSweep { source, target in
                    swept.withLock { $0.append((source, target, replica.runningCalls)) }
                }
                // A call on this replica that resolved the source before the merge and is still running.
                let gate = Gate()
                let service = replica.track(SlowService(gate: gate))
                let call = Task { try await service.methods[0].handler([], SlowService.context) }
                try await eventually { replica.runningCalls == 1 }

                let (source, target) = (RaveID.random(), RaveID.random())
                let elsewhere = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
                try await MergedUsersTable.merge(source, into: target, by: elsewhere, pool: pool)
                try await eventually { try await replica.resolve(source) == target }
                #expect(swept.withLock { $0.isEmpty }, "the sweep must wait for the call that started earlier")

                gate.open()
                _ = try await call.value
                try await eventually { swept.withLock { $0.count == 1 } }
                let (sweptSource, sweptTarget, running) = swept.withLock { $0[0] }
                #expect(sweptSource == source && sweptTarget == target && running == 0)
            }
        }
    }

    @Test func theMergingProcessDoesNotSweepItsOwnMerge() async throws {
        try await MergedUsersTable.with { pool in
            try await MergedUsersTable.listening(pool) { here in
                let swept = Mutex<[RaveID]>([])
                here.onSweep { source, _ in swept.withLock { $0.append(source) } }
                let (source, target, probe) = (RaveID.random(), RaveID.random(), RaveID.random())
                try await MergedUsersTable.merge(source, into: target, by: here, pool: pool)
                // A merge recorded elsewhere after it: sweeps run in the order merges are announced, so once this
                // one is swept, the first would have been too.
                let elsewhere = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
                try await MergedUsersTable.merge(probe, into: target, by: elsewhere, pool: pool)
                try await eventually { swept.withLock { $0.contains(probe) } }
                #expect(swept.withLock { $0 } == [probe])
                #expect(try await here.resolve(source) == target)
            }
        }
    }
}

@Suite("Merged users: concurrent misses")
struct ConcurrentMissTests {
    @Test("single-id misses of calls running at the same time share one read, and each gets its own answer")
    func concurrentMissesShareOneRead() async throws {
        try await ScratchDatabase.with(prefix: "rave_merges_") { url in
            let pool = try ScratchDatabase.pool(url: url, size: 1)
            defer { pool.shutdown() }
            try await pool.withConnection { try await $0.runScript(MergedUsersTable.schema) }
            let (source, target) = (RaveID.random(), RaveID.random())
            try await MergedUsersTable.merge(
                source, into: target, by: MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger),
                pool: pool)
            // A process that knows nothing yet: every id below is a miss.
            let merges = MergedUsers(pool: pool, loop: nil, logger: MergedUsersTable.logger)
            let ids = [source] + (0..<19).map { _ in RaveID.random() }
            let (holding, gate) = (Gate(), Gate())
            let held = Task {
                try await pool.withConnection { _ in
                    holding.open()
                    await gate.wait()
                }
            }
            await holding.wait()
            let answers = Task {
                try await withThrowingTaskGroup(of: (RaveID, RaveID).self) { group in
                    for id in ids { group.addTask { (id, try await merges.resolve(id)) } }
                    return try await group.reduce(into: [RaveID: RaveID]()) { $0[$1.0] = $1.1 }
                }
            }
            // One read waits for the only connection, the misses that came after it wait for the next read
            // instead of a connection each.
            try await eventually {
                pool.statistics.waiting == 1 && merges.misses.withLock { $0.reading + $0.ids.count } == ids.count
            }
            gate.open()
            try await held.value
            let resolved = try await answers.value
            #expect(resolved[source] == target)
            #expect(ids.dropFirst().allSatisfy { resolved[$0] == $0 })
        }
    }
}

/// A one-method service whose call waits for a gate, standing for a call still writing under an old id.
struct SlowService: RPCService {
    static let serviceName = "rave.testing.v1.Slow"
    let gate: Gate

    var methods: [RPCMethod] {
        let gate = self.gate
        return [
            RPCMethod(name: "\(Self.serviceName)/Wait") { _, _ in
                await gate.wait()
                return []
            }
        ]
    }

    static var context: RequestContext {
        RequestContext(
            requestID: "test", method: "test", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: nil), caller: nil,
            logger: MergedUsersTable.logger)
    }
}

/// Opens once; the call waiting on it then returns.
typealias Gate = ShutdownLatch
