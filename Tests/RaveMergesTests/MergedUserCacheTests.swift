import RavePostgres
import RaveRPC
import Synchronization
import Testing

@testable import RaveMerges

@Suite("What a process remembers of merged users")
struct MergedUserCacheTests {
    let source = RaveID.random()
    let target = RaveID.random()
    let start = ContinuousClock.now

    @Test func notMergedIsServedOnlyWhileTheSameConnectionListens() {
        var cache = MergedUserCache(capacity: 100, maxAge: .seconds(60))
        #expect(cache.lookup(source, listening: nil, now: start) == .bypass)
        guard case .miss(let ticket) = cache.lookup(source, listening: 1, now: start) else {
            Issue.record("a listening cache must ask the database first")
            return
        }
        cache.store(.notMerged, for: ticket, listening: 1, now: start)
        #expect(cache.lookup(source, listening: 1, now: start) == .hit(.notMerged))
        // Down, then a new connection: a merge may have gone unannounced meanwhile.
        #expect(cache.lookup(source, listening: nil, now: start) == .bypass)
        guard case .miss = cache.lookup(source, listening: 2, now: start) else {
            Issue.record("a new connection must forget what was not merged")
            return
        }
    }

    @Test func aMergeLearnedDuringAReadVoidsItsNotMerged() {
        var cache = MergedUserCache(capacity: 100, maxAge: .seconds(60))
        guard case .miss(let ticket) = cache.lookup(source, listening: 1, now: start) else {
            Issue.record("expected a miss")
            return
        }
        // The read's snapshot predates the merge's commit; the notification arrives before the read returns.
        cache.learn(source: source, target: target, now: start)
        cache.store(.notMerged, for: ticket, listening: 1, now: start)
        #expect(cache.lookup(source, listening: 1, now: start) == .hit(.merged(into: target)))
    }

    @Test func aReadUnderAnEarlierConnectionKeepsNothing() {
        var cache = MergedUserCache(capacity: 100, maxAge: .seconds(60))
        guard case .miss(let ticket) = cache.lookup(source, listening: 1, now: start) else {
            Issue.record("expected a miss")
            return
        }
        cache.store(.notMerged, for: ticket, listening: 2, now: start)
        guard case .miss = cache.lookup(source, listening: 2, now: start) else {
            Issue.record("an answer read while the listener reconnected must not be kept")
            return
        }
    }

    @Test func notMergedExpiresButMergedStays() {
        var cache = MergedUserCache(capacity: 100, maxAge: .seconds(60))
        let other = RaveID.random()
        if case .miss(let ticket) = cache.lookup(other, listening: 1, now: start) {
            cache.store(.notMerged, for: ticket, listening: 1, now: start)
        }
        cache.learn(source: source, target: target, now: start)
        let later = start + .seconds(61)
        guard case .miss = cache.lookup(other, listening: 1, now: later) else {
            Issue.record("an old answer of not merged must be read again")
            return
        }
        #expect(cache.lookup(source, listening: 1, now: later) == .hit(.merged(into: target)))
        #expect(cache.lookup(source, listening: 7, now: later) == .hit(.merged(into: target)))
        #expect(cache.lookup(source, listening: nil, now: later) == .hit(.merged(into: target)))
    }

    @Test func theFastPathServesOnlyWhatALookupWould() {
        var cache = MergedUserCache(capacity: 100, maxAge: .seconds(60))
        #expect(!cache.isKnownUnmerged(source, listening: 1, now: start), "nothing known yet")
        if case .miss(let ticket) = cache.lookup(source, listening: 1, now: start) {
            cache.store(.notMerged, for: ticket, listening: 1, now: start)
        }
        #expect(cache.isKnownUnmerged(source, listening: 1, now: start))
        #expect(!cache.isKnownUnmerged(source, listening: 2, now: start), "another connection may have missed a merge")
        #expect(!cache.isKnownUnmerged(source, listening: 1, now: start + .seconds(61)), "too old")
        cache.learn(source: source, target: target, now: start)
        #expect(!cache.isKnownUnmerged(source, listening: 1, now: start))
    }

    @Test func theWholeTableAnswersEveryOtherIdWithoutARead() {
        var cache = MergedUserCache(capacity: 100, maxAge: .seconds(60))
        let stranger = RaveID.random()
        let ticket = cache.beginTableRead(listening: 1, now: start)
        cache.storeTable([(source, target)], for: ticket, listening: 1, now: start)
        #expect(cache.lookup(stranger, listening: 1, now: start) == .hit(.notMerged))
        #expect(cache.lookup(source, listening: 1, now: start) == .hit(.merged(into: target)))
        #expect(cache.isKnownUnmerged(stranger, listening: 1, now: start))
        #expect(cache.resolveFromMemory(stranger, listening: 1, now: start, maximumHops: 8) == stranger)
        #expect(cache.resolveFromMemory(source, listening: 1, now: start, maximumHops: 8) == target)
        #expect(cache.count == 1, "no entry is kept for ids that are not merged")
        // Another connection, or too old: merges may have gone unannounced.
        #expect(cache.resolveFromMemory(stranger, listening: 2, now: start, maximumHops: 8) == nil)
        guard case .miss = cache.lookup(stranger, listening: 2, now: start) else {
            Issue.record("a new connection must not trust a table read under the old one")
            return
        }
        let fresh = cache.beginTableRead(listening: 2, now: start)
        cache.storeTable([], for: fresh, listening: 2, now: start)
        #expect(cache.isKnownUnmerged(stranger, listening: 2, now: start))
        #expect(!cache.isKnownUnmerged(stranger, listening: 2, now: start + .seconds(61)), "too old")
        #expect(cache.lookup(source, listening: 2, now: start) == .hit(.merged(into: target)), "merges stay true")
    }

    @Test func aTableReadUnderAnEarlierConnectionKeepsItsMergesButIsNotWhole() {
        var cache = MergedUserCache(capacity: 100, maxAge: .seconds(60))
        let ticket = cache.beginTableRead(listening: 1, now: start)
        cache.storeTable([(source, target)], for: ticket, listening: 2, now: start)
        #expect(cache.lookup(source, listening: 2, now: start) == .hit(.merged(into: target)))
        // Whether the target was merged in turn, memory cannot tell.
        #expect(cache.resolveFromMemory(source, listening: 2, now: start, maximumHops: 8) == nil)
        #expect(!cache.isKnownUnmerged(RaveID.random(), listening: 2, now: start))
        #expect(cache.completeAge(listening: 2, now: start) == nil)
    }

    @Test func aMergeAnnouncedDuringTheTableReadIsKept() {
        var cache = MergedUserCache(capacity: 100, maxAge: .seconds(60))
        let ticket = cache.beginTableRead(listening: 1, now: start)
        cache.learn(source: source, target: target, now: start)
        cache.storeTable([], for: ticket, listening: 1, now: start)
        #expect(cache.resolveFromMemory(source, listening: 1, now: start, maximumHops: 8) == target)
    }

    @Test func aTableBiggerThanTheCacheIsNotHeldWhole() {
        var cache = MergedUserCache(capacity: 2, maxAge: .seconds(60))
        let merges = (0..<3).map { _ in (source: RaveID.random(), target: RaveID.random()) }
        let ticket = cache.beginTableRead(listening: 1, now: start)
        cache.storeTable(merges, for: ticket, listening: 1, now: start)
        #expect(!cache.isKnownUnmerged(RaveID.random(), listening: 1, now: start))
        #expect(cache.resolveFromMemory(merges[0].source, listening: 1, now: start, maximumHops: 8) == nil)
    }

    @Test func forgettingAMergedIdEndsWholeness() {
        var cache = MergedUserCache(capacity: 2, maxAge: .seconds(60))
        let ticket = cache.beginTableRead(listening: 1, now: start)
        cache.storeTable([(source, target)], for: ticket, listening: 1, now: start)
        cache.learn(source: RaveID.random(), target: target, now: start)
        #expect(cache.isKnownUnmerged(RaveID.random(), listening: 1, now: start))
        // A third merge does not fit: one merged id is dropped, so absence no longer proves anything.
        cache.learn(source: RaveID.random(), target: target, now: start)
        #expect(!cache.isKnownUnmerged(RaveID.random(), listening: 1, now: start))
    }

    @Test func memoryFollowsChainsAndRefusesErasedIds() {
        var cache = MergedUserCache(capacity: 100, maxAge: .seconds(60))
        let end = RaveID.random()
        let ticket = cache.beginTableRead(listening: 1, now: start)
        cache.storeTable([(source, target)], for: ticket, listening: 1, now: start)
        cache.learn(source: target, target: end, now: start)
        #expect(cache.resolveFromMemory(source, listening: 1, now: start, maximumHops: 8) == end)
        #expect(cache.resolveFromMemory(source, listening: 1, now: start, maximumHops: 0) == nil, "too many hops")
        cache.markErased(end)
        #expect(cache.resolveFromMemory(source, listening: 1, now: start, maximumHops: 8) == nil)
        #expect(cache.resolveFromMemory(end, listening: 1, now: start, maximumHops: 8) == nil)
        #expect(!cache.isKnownUnmerged(end, listening: 1, now: start))
    }

    @Test func aFullCacheDropsNotMergedFirst() {
        var cache = MergedUserCache(capacity: 4, maxAge: .seconds(60))
        cache.learn(source: source, target: target, now: start)
        for _ in 0..<10 {
            if case .miss(let ticket) = cache.lookup(RaveID.random(), listening: 1, now: start) {
                cache.store(.notMerged, for: ticket, listening: 1, now: start)
            }
        }
        #expect(cache.count <= 4)
        #expect(cache.lookup(source, listening: 1, now: start) == .hit(.merged(into: target)))
    }
}

@Suite("Waiting for the calls that started before a merge")
struct CallTrackerTests {
    @Test func drainWaitsForEarlierCallsOnly() async {
        let calls = CallTracker()
        let earlier = calls.begin()
        let drained = Task { await calls.drain(timeout: .seconds(30)) }
        // A call that starts after the drain began is not waited for.
        while calls.epoch == 0 { await Task.yield() }
        let later = calls.begin()
        #expect(calls.runningCalls == 2)
        calls.end(earlier)
        #expect(await drained.value)
        calls.end(later)
        #expect(calls.runningCalls == 0)
    }

    @Test func drainWithNothingRunningReturnsAtOnce() async {
        let calls = CallTracker()
        calls.end(calls.begin())
        #expect(await calls.drain(timeout: .seconds(30)))
    }

    @Test func drainGivesUpAfterItsTimeout() async {
        let calls = CallTracker()
        let stuck = calls.begin()
        #expect(await !calls.drain(timeout: .milliseconds(50)))
        calls.end(stuck)
    }

    @Test func callsOfSeveralEpochsEndingInAnyOrderReleaseEachDrainOnce() async {
        let calls = CallTracker()
        let first = calls.begin()
        let firstDrain = Task { await calls.drain(timeout: .seconds(30)) }
        while calls.epoch < 1 { await Task.yield() }
        let (second, third) = (calls.begin(), calls.begin())
        let secondDrain = Task { await calls.drain(timeout: .seconds(30)) }
        while calls.epoch < 2 { await Task.yield() }
        #expect(calls.runningCalls == 3)
        // A later epoch's call ends first: neither drain is released by it.
        calls.end(second)
        calls.end(first)
        #expect(await firstDrain.value)
        #expect(calls.runningCalls == 1)
        calls.end(third)
        #expect(await secondDrain.value)
        #expect(calls.runningCalls == 0)
        // Ending an epoch twice over (a defect of the caller) does not count below zero.
        calls.end(third)
        #expect(calls.runningCalls == 0)
    }

    @Test func trackedFastPathsCountLikeHandlers() async throws {
        let calls = CallTracker()
        let seen = Seen()
        let tracked = TrackedService(CountingService(calls: calls, seen: seen), calls: calls)
        #expect(tracked.methods.map { $0.fastPath != nil } == [true, false])
        let answer = try [UInt8]().withUnsafeBytes { try tracked.methods[0].fastPath?($0, SlowService.context) }
        #expect(answer == [1])
        _ = try await tracked.methods[0].handler([], SlowService.context)
        _ = try await tracked.methods[1].handler([], SlowService.context)
        // Each path saw its own call running, and nothing is left running after them.
        #expect(seen.counts.withLock { $0 } == [1, 1, 1])
        #expect(calls.runningCalls == 0)
    }

    @Test func recentSetKeepsOnlyTheNewest() {
        var set = RecentSet(capacity: 3)
        let ids = (0..<5).map { _ in RaveID.random() }
        for id in ids { set.insert(id) }
        #expect(!set.contains(ids[0]) && !set.contains(ids[1]))
        #expect(set.contains(ids[2]) && set.contains(ids[3]) && set.contains(ids[4]))
    }
}

/// A method with a fast path and one without; each records how many calls `calls` counts while it runs.
private struct CountingService: RPCService {
    static let serviceName = "rave.testing.v1.Counting"
    let calls: CallTracker
    let seen: Seen

    var methods: [RPCMethod] {
        let (calls, seen) = (self.calls, self.seen)
        let record: @Sendable () -> [UInt8] = {
            seen.counts.withLock { $0.append(calls.runningCalls) }
            return [1]
        }
        return [
            RPCMethod(
                name: "\(Self.serviceName)/Fast", handler: { _, _ in record() }, fastPath: { _, _ in record() }),
            RPCMethod(name: "\(Self.serviceName)/Slow") { _, _ in record() },
        ]
    }
}

/// The running-call counts `CountingService` saw.
private final class Seen: Sendable {
    let counts = Mutex<[Int]>([])
}
