import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Leaderboards

@Suite("Leaderboards operator reads: boards, top scores, a player's standing, achievements")
struct AdminReadsTests {
    @Test("ListLeaderboards lists every board of the app, inactive ones too, in sorter order with entry counts")
    func listLeaderboardsShowsEveryBoardWithCounts() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("points")
            try await service.define("retired", active: false)
            try await service.submit(10, by: .random(), to: "points")
            try await service.submit(20, by: .random(), to: "points")
            let admin = Callers.admin(app: service.app)
            let listed = try await service.admin.listLeaderboards(.init(appId: service.app), context: admin)
            #expect(listed.leaderboards.map { $0.definition?.key ?? "" } == ["points", "retired"])
            #expect(listed.leaderboards.map(\.entryCount) == [2, 0])
            #expect(listed.leaderboards.allSatisfy { $0.standing == nil })
            let other = try await service.admin.listLeaderboards(.init(appId: uniqueApp()), context: admin)
            #expect(other.leaderboards.isEmpty)
        }
    }

    @Test("GetTopScores answers the best n entries and GetUserStanding a player's (merged ids resolved)")
    func topScoresAndStanding() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("points")
            let users = (0..<5).map { _ in RaveID.random() }
            for (offset, user) in users.enumerated() {
                try await service.submit(Int64(50 - offset), by: user, to: "points")
            }
            let admin = Callers.admin(app: service.app)
            let top = try await service.admin.getTopScores(
                .init(appId: service.app, leaderboardKey: "points", count: 3), context: admin)
            #expect(top.scores.map(\.userId) == users.prefix(3).map(\.hex))
            #expect(top.scores.map(\.position) == [1, 2, 3])
            #expect(top.total == 5)

            service.friends.befriend(users[3], users[0])
            let standing = try await service.admin.getUserStanding(
                .init(appId: service.app, leaderboardKey: "points", userId: users[3].hex), context: admin)
            #expect(standing.leaderboard?.standing?.highScore == 47)
            #expect(standing.leaderboard?.standing?.globalPosition == 4)
            #expect(standing.leaderboard?.standing?.friendsPosition == 2)
            let scoreless = try await service.admin.getUserStanding(
                .init(appId: service.app, leaderboardKey: "points", userId: RaveID.random().hex), context: admin)
            #expect(scoreless.leaderboard?.standing == nil)
            #expect(scoreless.leaderboard?.entryCount == 5)
        }
    }

    @Test("ListAchievements lists the app's definitions by key")
    func listAchievementsByKey() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            let admin = Callers.admin(app: service.app)
            for key in ["second", "first"] {
                _ = try await service.admin.defineAchievement(
                    .init(appId: service.app, definition: .init(key: key, name: key.capitalized, description: "d")),
                    context: admin)
            }
            let listed = try await service.admin.listAchievements(.init(appId: service.app), context: admin)
            #expect(listed.definitions.map(\.key) == ["first", "second"])
            #expect(listed.definitions.first?.name == "First")
        }
    }

    @Test("bad input to the operator reads is INVALID_ARGUMENT or NOT_FOUND in our words; players are refused")
    func badInputToOperatorReads() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("points")
            let admin = Callers.admin(app: service.app)
            for count in [0, 101, -1] {
                let refused = await Self.refusal {
                    _ = try await service.admin.getTopScores(
                        .init(appId: service.app, leaderboardKey: "points", count: Int32(count)), context: admin)
                }
                #expect(refused?.code == .invalidArgument)
                #expect(refused?.message == "count must be 1…100, got \(count)")
            }
            await expectStatus(.invalidArgument) {
                _ = try await service.admin.listLeaderboards(.init(appId: "NOT-AN-ID"), context: admin)
            }
            await expectStatus(.invalidArgument) {
                _ = try await service.admin.getUserStanding(
                    .init(appId: service.app, leaderboardKey: "points", userId: "abc"), context: admin)
            }
            await expectStatus(.invalidArgument) {
                _ = try await service.admin.getTopScores(
                    .init(appId: service.app, leaderboardKey: "", count: 5), context: admin)
            }
            await expectStatus(.notFound) {
                _ = try await service.admin.getTopScores(
                    .init(appId: service.app, leaderboardKey: "unknown", count: 5), context: admin)
            }
            await expectStatus(.permissionDenied) {
                _ = try await service.admin.listAchievements(
                    .init(appId: service.app), context: service.context(for: .random()))
            }
        }
    }

    /// The status `body` fails with, as a caller sees it; nil when it succeeds.
    static func refusal(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch {
            return RPCError(mapping: error, requestID: "test")
        }
    }
}
