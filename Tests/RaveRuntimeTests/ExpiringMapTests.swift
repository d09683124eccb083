import Testing

@testable import RaveRuntime

/// The one time-limited cache of what rarely changes (identity's applications, the admin scope's publishers).
@Suite struct ExpiringMapTests {
    let start = ContinuousClock.now

    @Test func aValueIsServedUntilItsInstantAndNotAfter() {
        var map = ExpiringMap<String, Int>(capacity: 10)
        map.insert(1, for: "a", until: start + .seconds(5), now: start)
        #expect(map.value(for: "a", at: start + .seconds(4)) == 1)
        #expect(map.value(for: "a", at: start + .seconds(5)) == nil)
        #expect(map.value(for: "b", at: start) == nil)
    }

    @Test func aNewerValueReplacesTheOlder() {
        var map = ExpiringMap<String, Int>(capacity: 1)
        map.insert(1, for: "a", until: start + .seconds(5), now: start)
        map.insert(2, for: "a", until: start + .seconds(9), now: start + .seconds(1))
        #expect(map.value(for: "a", at: start + .seconds(6)) == 2)
        #expect(map.count == 1)
    }

    @Test func whenFullExpiredEntriesGoFirst() {
        var map = ExpiringMap<String, Int>(capacity: 3)
        map.insert(1, for: "old", until: start + .seconds(1), now: start)
        map.insert(2, for: "fresh1", until: start + .seconds(60), now: start)
        map.insert(3, for: "fresh2", until: start + .seconds(60), now: start)
        map.insert(4, for: "new", until: start + .seconds(60), now: start + .seconds(2))
        #expect(map.count == 3)
        #expect(map.value(for: "fresh1", at: start + .seconds(2)) == 2)
        #expect(map.value(for: "new", at: start + .seconds(2)) == 4)
    }

    /// Every entry fresh and the map full: it starts again empty rather than grow past its capacity.
    @Test func itNeverHoldsMoreThanItsCapacity() {
        var map = ExpiringMap<Int, Int>(capacity: 100)
        for key in 0..<1_000 {
            map.insert(key, for: key, until: start + .seconds(3600), now: start)
            #expect(map.count <= 100)
        }
        #expect(map.value(for: 999, at: start) == 999)
    }
}
