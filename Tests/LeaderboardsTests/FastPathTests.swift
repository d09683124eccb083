import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import Testing

@testable import Leaderboards

/// GetLeaderboard answered in place from memory (`PlayerHandlers.getLeaderboardFromMemory`) answers exactly as its
/// async handler does, and declines whenever a step would have to wait.
@Suite("Leaderboards: GetLeaderboard from memory")
struct FastPathTests {
    /// What a caller receives: the response's bytes, or the status the server would send for the error.
    enum Answer: Equatable {
        case response([UInt8])
        case failure(RPCError)
        /// The fast path left the call to the async handler.
        case declined
    }

    /// A service and the record of merges its handlers resolve ids through.
    struct Fixture {
        let service: ServiceFixture
        let merges: MergedUsers

        var player: PlayerHandlers { service.player }

        func fromMemory(_ key: String, _ context: RequestContext) -> Answer {
            do {
                let response = try player.getLeaderboardFromMemory(
                    LeaderboardsV1.GetLeaderboardRequest(leaderboardKey: key), context: context)
                return response.map { .response($0.protobufBytes()) } ?? .declined
            } catch {
                return .failure(RPCError(mapping: error, requestID: "test"))
            }
        }

        func awaited(_ key: String, _ context: RequestContext) async -> Answer {
            do {
                let response = try await player.getLeaderboard(
                    LeaderboardsV1.GetLeaderboardRequest(leaderboardKey: key), context: context)
                return .response(response.protobufBytes())
            } catch {
                return .failure(RPCError(mapping: error, requestID: "test"))
            }
        }

        /// Asks the async handler first (it caches the definition, loads the index and resolves the caller), then
        /// the fast path, which must give the same bytes.
        func expectSameAnswer(
            _ key: String, _ context: RequestContext, sourceLocation: SourceLocation = #_sourceLocation
        ) async -> Answer {
            let awaited = await awaited(key, context)
            let fromMemory = fromMemory(key, context)
            #expect(fromMemory == awaited, sourceLocation: sourceLocation)
            return awaited
        }

        /// `expectSameAnswer`, and the fast path answered (did not decline).
        func expectAnsweredFromMemory(
            _ key: String, _ context: RequestContext, sourceLocation: SourceLocation = #_sourceLocation
        ) async {
            _ = await expectSameAnswer(key, context, sourceLocation: sourceLocation)
            #expect(fromMemory(key, context) != .declined, sourceLocation: sourceLocation)
        }
    }

    /// Runs `body` with a service whose merges listen (so ids resolve from memory), owning boards by `ownership`
    /// (default: the sole instance, owning every board).
    static func withFixture(
        ownership: (@Sendable (PostgresPool) -> BoardOwnership)? = nil, _ body: (Fixture) async throws -> Void
    ) async throws {
        try await TestDatabase.withPool { pool in
            let merges = MergedUsers(
                pool: pool, loop: TestDatabase.group.next(), logger: Logger(label: "fast-path", level: .critical))
            let service = ServiceFixture(pool: pool, merges: merges, ownership: ownership?(pool) ?? .sole())
            try await merges.listening {
                try await body(Fixture(service: service, merges: merges))
            }
        }
    }

    @Test("an owned board: the player's standing with friends above and below, a guest, a player without a score")
    func ownedBoardAnswersAlike() async throws {
        try await Self.withFixture { fixture in
            let service = fixture.service
            try await service.define("points")
            let (alice, bob, carol, dave, stranger) = (
                RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random()
            )
            for (score, user) in [(10, alice), (20, bob), (30, carol), (5, dave)] {
                try await service.submit(Int64(score), by: user, to: "points")
            }
            for friend in [bob, carol, dave] { service.friends.befriend(alice, friend) }
            let answer = await fixture.expectSameAnswer("points", service.context(for: alice))
            guard case .response(let bytes) = answer else {
                Issue.record("expected a response, got \(answer)")
                return
            }
            let standing = try LeaderboardsV1.GetLeaderboardResponse(protobufBytes: bytes).leaderboard?.standing
            #expect(standing?.globalPosition == 3 && standing?.friendsPosition == 3 && standing?.highScore == 10)
            #expect(fixture.fromMemory("points", service.context(for: alice)) != .declined)
            // A guest reading the board, and a player who has no score on it.
            await fixture.expectAnsweredFromMemory("points", service.context(for: nil))
            await fixture.expectAnsweredFromMemory("points", service.context(for: stranger))
        }
    }

    @Test("a caller merged away reads the target's standing from memory as from the handler")
    func mergedCallerAnswersAlike() async throws {
        try await Self.withFixture { fixture in
            let service = fixture.service
            try await service.define("points")
            let (bob, guest) = (RaveID.random(), RaveID.random())
            try await service.submit(300, by: bob, to: "points")
            try await service.submit(500, by: guest, to: "points")
            try await service.merge(guest, into: bob)
            let answer = await fixture.expectSameAnswer("points", service.context(for: guest))
            guard case .response(let bytes) = answer else {
                Issue.record("expected a response, got \(answer)")
                return
            }
            #expect(fixture.fromMemory("points", service.context(for: guest)) != .declined)
            let standing = try LeaderboardsV1.GetLeaderboardResponse(protobufBytes: bytes).leaderboard?.standing
            #expect(standing?.highScore == 500, "the target's best: the guest's score moved to bob")
            #expect(await fixture.awaited("points", service.context(for: bob)) == answer)
        }
    }

    @Test("a bad key and a call without a caller fail alike; an unknown board is left to the handler (NOT_FOUND)")
    func failuresAnswerAlike() async throws {
        try await Self.withFixture { fixture in
            let service = fixture.service
            let badKey = await fixture.expectSameAnswer(String(repeating: "k", count: 1000), service.context(for: nil))
            #expect(badKey.failureCode == .invalidArgument)
            var anonymous = service.context(for: nil)
            anonymous.caller = nil
            let unauthenticated = await fixture.expectSameAnswer("points", anonymous)
            #expect(unauthenticated.failureCode == .unauthenticated)
            #expect(fixture.fromMemory("missing", service.context(for: nil)) == .declined)
            #expect(await fixture.awaited("missing", service.context(for: nil)).failureCode == .notFound)
        }
    }

    @Test("a board another instance owns is left to the handler, which refuses it naming the owner")
    func unownedBoardIsLeftToTheHandler() async throws {
        try await Self.withFixture(ownership: { pool in
            BoardOwnership(pool: pool, address: "127.0.0.1:1", leaseDuration: .seconds(30), evict: { _ in })
        }) { fixture in
            let service = fixture.service
            // The other instance defines the board, and so holds it.
            let other = BoardOwnership(
                pool: service.pool, address: "127.0.0.1:2", leaseDuration: .seconds(30), evict: { _ in })
            try await ServiceFixture(pool: service.pool, app: service.app, ownership: other).define("points")
            _ = try await service.engine.board(appID: service.app, key: "points")
            #expect(fixture.fromMemory("points", service.context(for: nil)) == .declined, "cached, but not held")
            let refused = await fixture.awaited("points", service.context(for: nil))
            #expect(refused.failureCode == .unavailable)
            #expect(fixture.fromMemory("points", service.context(for: nil)) == .declined, "still not held here")
        }
    }

    @Test("memory declines until the definition is cached and the index loaded")
    func declinesUntilEverythingIsInMemory() async throws {
        try await Self.withFixture { fixture in
            let service = fixture.service
            try await service.define("points")
            let alice = RaveID.random()
            // Defining the board drops its cached definition.
            #expect(fixture.fromMemory("points", service.context(for: nil)) == .declined)
            let board = try await service.engine.board(appID: service.app, key: "points")
            service.engine.indexes.evict(boardID: board.boardID)
            #expect(fixture.fromMemory("points", service.context(for: nil)) == .declined, "the index is not loaded")
            _ = try await service.engine.currentIndex(of: board)
            #expect(fixture.fromMemory("points", service.context(for: nil)) != .declined)
            // A listening process knows every merge, so a caller never seen before resolves from memory too.
            await fixture.expectAnsweredFromMemory("points", service.context(for: alice))
        }
    }

    @Test("without a listener nothing resolves from memory: signed-in callers are left to the handler")
    func withoutAListenerSignedInCallersAreLeftToTheHandler() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("points")
            let alice = RaveID.random()
            try await service.submit(10, by: alice, to: "points")
            let fixture = Fixture(service: service, merges: service.engine.merges)
            await fixture.expectAnsweredFromMemory("points", service.context(for: nil))
            _ = await fixture.awaited("points", service.context(for: alice))
            #expect(fixture.fromMemory("points", service.context(for: alice)) == .declined)
        }
    }

    @Test("friends that must be asked of social are left to the handler")
    func friendsFromSocialAreLeftToTheHandler() async throws {
        let peers = try PeerHarness()
        try await TestDatabase.withPool { pool in
            let (fixture, player) = PeerProviderTests.service(pool: pool, peers: peers)
            try await fixture.define("points")
            let alice = RaveID.random()
            try await fixture.submit(10, by: alice, to: "points")
            let request = LeaderboardsV1.GetLeaderboardRequest(leaderboardKey: "points")
            _ = try await player.getLeaderboard(request, context: fixture.context(for: nil))
            #expect(try player.getLeaderboardFromMemory(request, context: fixture.context(for: nil)) != nil)
            #expect(try player.getLeaderboardFromMemory(request, context: fixture.context(for: alice)) == nil)
            _ = try await player.getLeaderboard(request, context: fixture.context(for: alice))
            #expect(try player.getLeaderboardFromMemory(request, context: fixture.context(for: alice)) == nil)
        }
    }

    @Test("the served player service answers GetLeaderboard in place and keeps every method")
    func servedServiceHasTheFastPath() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            let served = LeaderboardsDependencies(engine: service.engine).rpcServices[0]
            #expect(type(of: served).serviceName == PlayerHandlers.serviceName)
            #expect(served.methods.map(\.name) == service.player.methods.map(\.name))
            #expect(served.methods.filter { $0.fastPath != nil }.map(\.name) == [PlayerHandlers.getLeaderboardMethod])
        }
    }
}

extension FastPathTests.Answer {
    var failureCode: StatusCode? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
