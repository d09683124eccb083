import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Synchronization
import Testing

@testable import Leaderboards

@Suite("Leaderboards: erasing a deleted account")
struct ErasureTests {
    @Test("every score, past version and unlock of the user and its merged ids goes, from the table and the index")
    func eraseUserLeavesNothingNamingTheUser() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("high")
            try await service.define("weekly", reset: .weekly)
            _ = try await service.admin.defineAchievement(
                LeaderboardsV1.DefineAchievementRequest(
                    appId: service.app, definition: LeaderboardsV1.AchievementDefinition(key: "first", name: "First")),
                context: Callers.admin(app: service.app))
            let (user, merged, bystander, namedOnly) = (
                RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random()
            )
            for (index, player) in [user, merged, bystander].enumerated() {
                try await service.submit(Int64(100 + index), by: player, to: "high")
                try await service.submit(Int64(10 + index), by: player, to: "weekly")
                _ = try await service.player.unlockAchievement(
                    LeaderboardsV1.UnlockAchievementRequest(achievementKey: "first"),
                    context: service.context(for: player))
            }
            // A new week: the first week's scores are a previous version, kept in the table.
            service.clock.advance(by: 8 * 24 * 3600 * 1_000_000)
            try await service.submit(20, by: user, to: "weekly")
            try await service.submit(21, by: bystander, to: "weekly")
            try await service.merge(merged, into: user)
            // Rows a call left under the merged id after the merge, and under an id only the request names.
            _ = try await pool.query(
                """
                INSERT INTO scores (board_id, version, user_id, score, achieved_at)
                SELECT board_id, 1, u, 5, now() FROM leaderboards, unnest($1::uuid[]) AS u WHERE key = 'high'
                """, [[merged, namedOnly]])
            let ids = [user, merged, namedOnly]
            #expect(try await ErasureChecks.rowsNaming(ids, in: pool).count >= 4)

            let dependencies = LeaderboardsDependencies(
                engine: service.engine, friends: service.friends, profiles: service.profiles)
            let request = ErasureV1.EraseUserRequest(
                erasureId: "erasure-1", userId: user.hex, mergedUserIds: [merged.hex, namedOnly.hex],
                tombstoneId: RaveID.random().hex)
            try await ErasureChecks.serving(
                LeaderboardsErasureParticipant(dependencies: dependencies), as: "leaderboards",
                group: TestDatabase.group
            ) { identity, gateway in
                let first = try await identity.eraseUser(request)
                #expect(!first.alreadyApplied && first.rowsAffected >= 9)
                #expect(try await ErasureChecks.rowsNaming(ids, in: pool) == [:])
                let before = try await ErasureChecks.rowCounts(in: pool)
                let again = try await identity.eraseUser(request)
                #expect(again.alreadyApplied && again.rowsAffected == 0)
                #expect(try await ErasureChecks.rowCounts(in: pool) == before)
                let refused = await ErasureChecks.status { _ = try await gateway.eraseUser(request) }
                #expect(refused == .permissionDenied)
            }

            #expect(try await service.board("high") == [Ranked(bystander, 102)])
            #expect(try await service.board("weekly") == [Ranked(bystander, 21)])
            #expect(try await service.rebuiltBoard("high") == [Ranked(bystander, 102)])
            let previous = try await service.player.getGlobalScores(
                LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "weekly", page: 1, pageSize: 10, version: 1),
                context: service.context(for: nil))
            #expect(previous.scores.map(\.userId) == [bystander.hex])
            let submitted = await ErasureChecks.status { try await service.submit(500, by: user, to: "high") }
            #expect(submitted == .notFound)
        }
    }

    @Test("score submits racing the erasure leave no entry for the user once it has answered")
    func submitsRacingTheErasureLeaveNoEntry() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("high")
            let (user, bystander) = (RaveID.random(), RaveID.random())
            try await service.submit(1, by: bystander, to: "high")
            try await service.submit(1, by: user, to: "high")
            let merges = service.engine.merges
            let dependencies = LeaderboardsDependencies(
                engine: service.engine, friends: service.friends, profiles: service.profiles)
            let race = RaceState()
            try await ErasureChecks.serving(
                LeaderboardsErasureParticipant(dependencies: dependencies), as: "leaderboards",
                group: TestDatabase.group
            ) { identity, _ in
                // Players submit rising scores for the user until the erasure has answered, and once more after that.
                let (_, problems) = try await ErasureChecks.racing(
                    {
                        try await service.submit(
                            race.score.wrappingAdd(1, ordering: .relaxed).newValue, by: user, to: "high")
                    },
                    merges: merges
                ) {
                    try await identity.eraseUser(
                        .init(erasureId: "race", userId: user.hex, tombstoneId: RaveID.random().hex))
                }
                #expect(problems.isEmpty)
            }
            #expect(try await service.board("high") == [Ranked(bystander, 1)])
            #expect(try await service.rows(of: user) == 0)
            #expect(try await service.rebuiltBoard("high") == [Ranked(bystander, 1)])
        }
    }
}

/// The next score the racing submits send.
private final class RaceState: Sendable {
    let score = Atomic<Int64>(2)
}
