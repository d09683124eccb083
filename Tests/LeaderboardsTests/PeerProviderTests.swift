import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import Synchronization
import Testing

@testable import Leaderboards

/// The production friends and profile providers over real mTLS RPC, against in-process social and identity.
@Suite("Leaderboards with social and identity")
struct PeerProviderTests {
    /// A service wired like production's, over `pool`, with the harness's peers.
    static func service(
        pool: PostgresPool, peers: PeerHarness, profileTimeToLive: Duration = .seconds(60)
    ) -> (ServiceFixture, PlayerHandlers) {
        let fixture = ServiceFixture(pool: pool)
        var configuration = IdentityProfileProvider.Configuration()
        configuration.timeToLive = profileTimeToLive
        let player = PlayerHandlers(
            dependencies: LeaderboardsDependencies(
                engine: fixture.engine, friends: SocialFriendsProvider(caller: peers.client),
                profiles: IdentityProfileProvider(
                    caller: peers.client, configuration: configuration,
                    logger: Logger(label: "profiles", level: .critical))))
        return (fixture, player)
    }

    @Test("friends scores list the friends social returns, with the names identity returns")
    func friendsScoresComeFromSocialWithIdentityNames() async throws {
        let peers = try PeerHarness()
        try await TestDatabase.withPool { pool in
            let (fixture, player) = Self.service(pool: pool, peers: peers)
            try await fixture.define("points")
            let (alice, bob, carol) = (RaveID.random(), RaveID.random(), RaveID.random())
            for (score, user) in [(10, alice), (20, bob), (30, carol)] {
                try await fixture.submit(Int64(score), by: user, to: "points")
            }
            peers.social.setFriends([bob], of: alice)
            peers.identity.setName("Alice", of: alice)
            peers.identity.setName("Bob", of: bob)

            let page = try await player.getFriendsScores(
                .init(leaderboardKey: "points", page: 1, pageSize: 10), context: fixture.context(for: alice))
            #expect(page.scores.map(\.userId) == [bob.hex, alice.hex])
            #expect(page.scores.map(\.displayName) == ["Bob", "Alice"])
            #expect(page.scores.first?.pictureUrl == "https://p/\(bob.hex)")

            // Carol has no profile: her row is nameless, and asking again is answered from the cache.
            let global = try await player.getGlobalScores(
                .init(leaderboardKey: "points", page: 1, pageSize: 10), context: fixture.context(for: alice))
            #expect(global.scores.map(\.displayName) == ["", "Bob", "Alice"])
            let calls = peers.identity.getUsersCalls
            _ = try await player.getGlobalScores(
                .init(leaderboardKey: "points", page: 1, pageSize: 10), context: fixture.context(for: alice))
            #expect(peers.identity.getUsersCalls == calls)
        }
        await peers.shutdown()
    }

    @Test("a failing identity leaves names empty without failing the query, and is asked again later")
    func profileFailureLeavesNamesEmpty() async throws {
        let peers = try PeerHarness()
        try await TestDatabase.withPool { pool in
            let (fixture, player) = Self.service(pool: pool, peers: peers)
            try await fixture.define("points")
            let alice = RaveID.random()
            try await fixture.submit(5, by: alice, to: "points")
            peers.identity.setName("Alice", of: alice)
            peers.identity.setDown(true)
            let request = LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "points", page: 1, pageSize: 10)

            let during = try await player.getGlobalScores(request, context: fixture.context(for: alice))
            #expect(during.scores.map(\.userId) == [alice.hex])
            #expect(during.scores.map(\.displayName) == [""])

            // A failure is not cached: once identity is back, the next page has the name.
            peers.identity.setDown(false)
            let after = try await player.getGlobalScores(request, context: fixture.context(for: alice))
            #expect(after.scores.map(\.displayName) == ["Alice"])
        }
        await peers.shutdown()
    }

    @Test("cached profiles expire after their time to live")
    func cachedProfilesExpire() async throws {
        let peers = try PeerHarness()
        let alice = RaveID.random()
        peers.identity.setName("Alice", of: alice)
        let start = ContinuousClock.now
        let elapsed = Mutex(Duration.zero)
        let profiles = IdentityProfileProvider(
            caller: peers.client, logger: Logger(label: "profiles", level: .critical),
            now: { start + elapsed.withLock { $0 } })
        #expect(await profiles.profiles(of: [alice], appID: "app")[alice]?.displayName == "Alice")
        peers.identity.setName("Alicia", of: alice)
        elapsed.withLock { $0 = .seconds(59) }
        #expect(await profiles.profiles(of: [alice], appID: "app")[alice]?.displayName == "Alice")
        elapsed.withLock { $0 = .seconds(61) }
        #expect(await profiles.profiles(of: [alice], appID: "app")[alice]?.displayName == "Alicia")
        #expect(peers.identity.getUsersCalls == 2)
        await peers.shutdown()
    }

    @Test("the profile cache stays within its capacity")
    func profileCacheIsBounded() async throws {
        let peers = try PeerHarness()
        var configuration = IdentityProfileProvider.Configuration()
        configuration.capacity = 4
        let profiles = IdentityProfileProvider(
            caller: peers.client, configuration: configuration, logger: Logger(label: "profiles", level: .critical))
        for _ in 0..<10 {
            let user = RaveID.random()
            peers.identity.setName("someone", of: user)
            #expect(await profiles.profiles(of: [user], appID: "app")[user]?.displayName == "someone")
            #expect(profiles.cachedCount <= 4)
        }
        await peers.shutdown()
    }

    @Test("a failing social fails friends queries with UNAVAILABLE")
    func socialFailureIsUnavailable() async throws {
        let peers = try PeerHarness()
        try await TestDatabase.withPool { pool in
            let (fixture, player) = Self.service(pool: pool, peers: peers)
            try await fixture.define("points")
            let alice = RaveID.random()
            try await fixture.submit(5, by: alice, to: "points")
            peers.social.failCalls(about: alice)
            await expectStatus(.unavailable) {
                _ = try await player.getFriendsScores(
                    .init(leaderboardKey: "points", page: 1, pageSize: 10), context: fixture.context(for: alice))
            }
        }
        await peers.shutdown()
    }
}
