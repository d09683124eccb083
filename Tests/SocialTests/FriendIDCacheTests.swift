import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import Testing

@testable import Social

@Suite("FriendIds cache")
struct FriendIDCacheTests {
    /// Every write that changes friendships (accept, remove, block, merge) shows in the next FriendIds, although
    /// the list before it was answered from memory.
    @Test func friendIdsFollowEveryFriendshipWrite() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let carol = try await harness.makePlayer("Carol")
            let service = harness.dependencies
            #expect(try await friendIDs(of: alice, harness.internalHandlers, harness.appID) == [])

            try await befriend(alice, bob, harness)
            try await drainNotifications(service)
            #expect(try await friendIDs(of: alice, harness.internalHandlers, harness.appID) == [bob.id])
            #expect(service.friendIDs.storedIDs >= 1)  // Held, so what follows checks invalidation, not reads.
            try await befriend(carol, alice, harness)
            #expect(
                try await friendIDs(of: alice, harness.internalHandlers, harness.appID) == [bob.id, carol.id].sorted())

            _ = try await harness.player.removeFriend(.init(listKey: "friends", userId: bob.id), context: alice.context)
            #expect(try await friendIDs(of: alice, harness.internalHandlers, harness.appID) == [carol.id])
            #expect(try await friendIDs(of: bob, harness.internalHandlers, harness.appID) == [])

            _ = try await harness.player.blockUser(.init(target: byID(alice)), context: carol.context)
            #expect(try await friendIDs(of: alice, harness.internalHandlers, harness.appID) == [])
            #expect(try await friendIDs(of: carol, harness.internalHandlers, harness.appID) == [])

            // Merge: Dave's friend Erin becomes Frank's.
            let dave = try await harness.makePlayer("Dave")
            let erin = try await harness.makePlayer("Erin")
            let frank = try await harness.makePlayer("Frank")
            try await befriend(dave, erin, harness)
            #expect(try await friendIDs(of: erin, harness.internalHandlers, harness.appID) == [dave.id])
            _ = try await harness.merge.mergeUsers(
                .init(mergeId: "merge-\(dave.id)", sourceUserId: dave.id, targetUserId: frank.id),
                context: SocialHarness.serviceContext)
            #expect(try await friendIDs(of: erin, harness.internalHandlers, harness.appID) == [frank.id])
            #expect(try await friendIDs(of: frank, harness.internalHandlers, harness.appID) == [erin.id])
        }
    }

    /// A second replica on the same database hears the first one's writes through NOTIFY and drops its entries.
    @Test func anotherReplicaDropsEntriesOnNotification() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            try await withSecondReplica(of: harness) { replica in
                let other = InternalHandlers(dependencies: replica)
                #expect(try await friendIDs(of: alice, other, harness.appID) == [])
                #expect(replica.friendIDs.storedIDs == 0)  // An empty list is held as no ids.

                try await befriend(alice, bob, harness)
                try await SocialHarness.waitUntil("the replica sees the friendship") {
                    try await friendIDs(of: alice, other, harness.appID) == [bob.id]
                }
                #expect(replica.friendIDs.storedIDs == 1)

                _ = try await harness.player.removeFriend(
                    .init(listKey: "friends", userId: alice.id), context: bob.context)
                try await SocialHarness.waitUntil("the replica sees the removal") {
                    try await friendIDs(of: alice, other, harness.appID) == []
                }
            }
        }
    }

    /// Notifications lost while the listener's connection was down cannot leave stale entries: the reconnect
    /// empties the cache.
    @Test func listenerReconnectEmptiesTheCache() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let carol = try await harness.makePlayer("Carol")
            try await befriend(alice, bob, harness)
            try await drainNotifications(harness.dependencies)
            let handlers = harness.internalHandlers
            #expect(try await friendIDs(of: alice, handlers, harness.appID) == [bob.id])

            // A friendship written behind the service's back: no notification, as if it had been lost.
            let pool = harness.dependencies.pool
            let list = try await harness.dependencies.lists.resolve(
                "friends", appID: try #require(RaveID(harness.appID)), kind: .friends)
            let aliceID = try #require(RaveID(alice.id))
            let carolID = try #require(RaveID(carol.id))
            try await pool.query(
                "INSERT INTO edges (list_id, owner_id, direction, peer_id) VALUES ($1, $2, 0, $3)",
                [list.id, aliceID, carolID])
            #expect(try await friendIDs(of: alice, handlers, harness.appID) == [bob.id])  // From memory.

            try await pool.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND query LIKE 'LISTEN%'
                """)
            try await SocialHarness.waitUntil("the cache starts over after the reconnect") {
                try await friendIDs(of: alice, handlers, harness.appID) == [bob.id, carol.id].sorted()
            }
        }
    }

    /// A fill that a notification for the same user overtakes is not kept.
    @Test func overtakenFillIsNotStored() async throws {
        try await SocialHarness.with { harness in
            let cache = harness.dependencies.friendIDs
            let owner = RaveID.random()
            guard case .miss(let ticket) = cache.lookup(listID: 1, owner: owner) else {
                Issue.record("expected a miss from a listening, empty cache")
                return
            }
            cache.invalidate([owner])
            cache.store([RaveID.random()], for: ticket)
            guard case .miss(let second) = cache.lookup(listID: 1, owner: owner) else {
                Issue.record("the overtaken fill was stored")
                return
            }
            cache.store([RaveID.random()], for: second)
            guard case .hit(let ids) = cache.lookup(listID: 1, owner: owner) else {
                Issue.record("an undisturbed fill was not stored")
                return
            }
            #expect(ids.count == 1)
        }
    }

    // MARK: - Helpers

    private func befriend(
        _ sender: SocialHarness.Player, _ recipient: SocialHarness.Player, _ harness: SocialHarness
    ) async throws {
        _ = try await harness.player.sendFriendRequest(
            .init(listKey: "friends", target: byID(recipient)), context: sender.context)
        _ = try await harness.player.acceptFriendRequest(
            .init(listKey: "friends", userId: sender.id), context: recipient.context)
    }

    /// Returns once the cache has applied every notification committed so far: they arrive in commit order, so
    /// once a marker entry is dropped by a notification sent now, the earlier ones were applied too.
    private func drainNotifications(_ service: SocialDependencies) async throws {
        let marker = RaveID.random()
        guard case .miss(let ticket) = service.friendIDs.lookup(listID: 0, owner: marker) else {
            Issue.record("the cache is not listening")
            return
        }
        service.friendIDs.store([], for: ticket)
        try await service.pool.query("SELECT pg_notify($1, $2)", [FriendIDCache.channel, marker.hex])
        try await SocialHarness.waitUntil("the marker notification arrives") {
            if case .hit = service.friendIDs.lookup(listID: 0, owner: marker) { return false }
            return true
        }
    }

    private func friendIDs(
        of player: SocialHarness.Player, _ handlers: InternalHandlers, _ appID: String
    ) async throws -> [String] {
        try await handlers.friendIds(.init(userId: player.id, appId: appID), context: SocialHarness.serviceContext)
            .userIds.sorted()
    }

    /// Another `SocialDependencies` (its own pool and cache) on the harness's database, as a second replica runs.
    private func withSecondReplica(
        of harness: SocialHarness, _ body: (SocialDependencies) async throws -> Void
    ) async throws {
        var configuration = PostgresPool.Configuration(
            connectionString: harness.dependencies.pool.configuration.connectionString)
        configuration.size = 2
        let pool = try PostgresPool(configuration: configuration, group: SocialHarness.group)
        defer { pool.shutdown() }
        let replica = SocialDependencies(
            pool: pool, directory: harness.dependencies.directory, configuration: SocialConfiguration(),
            loop: SocialHarness.group.next(), logger: Logger(label: "social-replica", level: .warning))
        try await SocialHarness.withFriendIDCache(replica) { try await body(replica) }
    }
}
