import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import Testing

@testable import Leaderboards

/// The handlers wired as the service wires them, over a real database, with a hand-moved clock.
struct ServiceFixture {
    let pool: PostgresPool
    let clock: ManualClock
    let friends = StaticFriendsProvider()
    let profiles = StaticProfileProvider()
    let engine: LeaderboardEngine
    let player: PlayerHandlers
    let admin: AdminHandlers
    let merge: LeaderboardsMergeParticipant
    let app: String

    /// 2026-01-07 12:00 UTC, a Wednesday.
    static let start: Int64 = 1_767_787_200_000_000

    /// `merges` stands for the instance's listening record of merges (default: one that reads the database);
    /// `ownership` for the boards this instance serves (default: every board).
    init(
        pool: PostgresPool, start: Int64 = ServiceFixture.start, app: String = uniqueApp(),
        merges: MergedUsers? = nil, ownership: BoardOwnership = .sole()
    ) {
        self.pool = pool
        self.app = app
        clock = ManualClock(start)
        engine = LeaderboardEngine(pool: pool, clock: clock.wallClock, merges: merges)
        let dependencies = LeaderboardsDependencies(
            engine: engine, ownership: ownership, friends: friends, profiles: profiles)
        player = PlayerHandlers(dependencies: dependencies)
        admin = AdminHandlers(dependencies: dependencies)
        merge = LeaderboardsMergeParticipant(dependencies: dependencies)
    }

    @discardableResult
    func define(
        _ key: String, ascending: Bool = false, reset: LeaderboardsV1.ResetInterval = .none,
        schedule: LeaderboardsV1.Schedule? = nil, active: Bool = true
    ) async throws -> LeaderboardsV1.Leaderboard? {
        try await admin.defineLeaderboard(
            LeaderboardsV1.DefineLeaderboardRequest(
                appId: app,
                definition: LeaderboardsV1.LeaderboardDefinition(
                    key: key, name: key.capitalized, sorter: 1, ascending: ascending, resetInterval: reset,
                    schedule: schedule, active: active)),
            context: Callers.admin(app: app)
        ).leaderboard
    }

    @discardableResult
    func submit(_ score: Int64, by user: RaveID, to key: String) async throws -> LeaderboardsV1.SubmitScoreResponse {
        try await player.submitScore(
            LeaderboardsV1.SubmitScoreRequest(leaderboardKey: key, score: score), context: context(for: user))
    }

    func context(for user: RaveID?) -> RequestContext { Callers.context(user: user, app: app) }
}

extension String {
    var capitalized: String { prefix(1).uppercased() + dropFirst() }
}

@Suite("Leaderboards score flows")
struct ScoreFlowTests {
    @Test("only a better score replaces the best, and the position follows")
    func submitKeepsBestForDescendingBoard() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("points")
            let alice = RaveID.random()
            let bob = RaveID.random()
            #expect(try await service.submit(100, by: alice, to: "points").newBest)
            service.clock.advance(by: 1)
            let second = try await service.submit(50, by: alice, to: "points")
            #expect(!second.newBest && second.highScore == 100 && second.globalPosition == 1)
            service.clock.advance(by: 1)
            #expect(try await service.submit(150, by: bob, to: "points").globalPosition == 1)
            service.clock.advance(by: 1)
            let again = try await service.submit(200, by: alice, to: "points")
            #expect(again.newBest && again.highScore == 200 && again.globalPosition == 1)

            let rows = try await pool.query("SELECT score FROM scores WHERE user_id = $1", [alice])
            #expect(try rows.map { try $0.decode(Int64.self, at: 0) } == [200])
        }
    }

    @Test("ascending boards rank the lowest score first and ties by time")
    func ascendingBoardRanksLowestFirst() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("race", ascending: true)
            let users = (0..<4).map { _ in RaveID.random() }
            for (offset, score) in [30, 10, 20, 10].enumerated() {
                try await service.submit(Int64(score), by: users[offset], to: "race")
                service.clock.advance(by: 1000)
            }
            let page = try await service.player.getGlobalScores(
                LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "race", page: 1, pageSize: 10),
                context: service.context(for: users[0]))
            #expect(page.scores.map(\.userId) == [users[1], users[3], users[2], users[0]].map(\.hex))
            #expect(page.scores.map(\.position) == [1, 2, 3, 4])
            #expect(page.total == 4)
        }
    }

    @Test("guests and closed boards get FAILED_PRECONDITION")
    func guestsAndClosedBoardsCannotSubmit() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("open")
            try await service.define("closed", active: false)
            let later = ServiceFixture.start / 1000 + 3_600_000
            try await service.define(
                "future", schedule: LeaderboardsV1.Schedule(startUnixMs: later, endUnixMs: later + 1000))
            let guest = Callers.context(user: RaveID.random(), app: service.app, scopes: ["guest"])
            await expectStatus(.failedPrecondition) {
                _ = try await service.player.submitScore(
                    LeaderboardsV1.SubmitScoreRequest(leaderboardKey: "open", score: 1), context: guest)
            }
            await expectStatus(.failedPrecondition) { try await service.submit(1, by: .random(), to: "closed") }
            await expectStatus(.failedPrecondition) { try await service.submit(1, by: .random(), to: "future") }
            service.clock.set(later * 1000)
            #expect(try await service.submit(1, by: .random(), to: "future").newBest)
            service.clock.set((later + 1000) * 1000)
            await expectStatus(.failedPrecondition) { try await service.submit(1, by: .random(), to: "future") }
        }
    }

    @Test("concurrent submits are grouped and every acknowledged score is in the table")
    func concurrentSubmitsAreDurable() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("crowd")
            let users = (0..<300).map { _ in RaveID.random() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (offset, user) in users.enumerated() {
                    group.addTask { try await service.submit(Int64(offset), by: user, to: "crowd") }
                }
                try await group.waitForAll()
            }
            let rows = try await pool.query("SELECT count(*) FROM scores")
            #expect(try rows[0].decode(Int.self, at: 0) == 300)
            let top = try await service.player.getGlobalScores(
                LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "crowd", page: 1, pageSize: 3),
                context: service.context(for: users[0]))
            #expect(top.scores.map(\.score) == [299, 298, 297])
            // A fresh engine rebuilt from the table agrees with the live one.
            let rebuilt = LeaderboardEngine(pool: pool, clock: service.clock.wallClock)
            let board = try await rebuilt.board(appID: service.app, key: "crowd")
            for user in users.prefix(20) {
                #expect(
                    try await rebuilt.standing(of: user, in: board)
                        == (try await service.engine.standing(of: user, in: board)))
            }
        }
    }
}

/// Expects `body` to fail with `code` (as the RPC layer would report it).
func expectStatus(
    _ code: StatusCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected \(code), but the call succeeded", sourceLocation: sourceLocation)
    } catch {
        let status = RPCError(mapping: error, requestID: "test")
        #expect(status.code == code, "\(status)", sourceLocation: sourceLocation)
    }
}
