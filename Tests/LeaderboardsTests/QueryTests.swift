import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Leaderboards

@Suite("Leaderboards queries, versions, achievements and merges")
struct QueryTests {
    @Test("around me, my page and friends, with a scoreless player placed last")
    func neighbourhoodQueries() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("points")
            let users = (0..<10).map { _ in RaveID.random() }
            for (offset, user) in users.enumerated() {
                try await service.submit(Int64(100 - offset), by: user, to: "points")
            }
            let around = try await service.player.getGlobalScoresAdjacent(
                LeaderboardsV1.GetScoresAdjacentRequest(leaderboardKey: "points", adjacent: 2),
                context: service.context(for: users[5]))
            #expect(around.scores.map(\.position) == [4, 5, 6, 7, 8])
            let stranger = RaveID.random()
            let worst = try await service.player.getGlobalScoresAdjacent(
                LeaderboardsV1.GetScoresAdjacentRequest(leaderboardKey: "points", adjacent: 3),
                context: service.context(for: stranger))
            #expect(worst.scores.map(\.position) == [8, 9, 10])
            let myPage = try await service.player.getMyGlobalScores(
                LeaderboardsV1.GetMyScoresRequest(leaderboardKey: "points", pageSize: 4),
                context: service.context(for: users[6]))
            #expect(myPage.page == 2 && myPage.scores.map(\.position) == [5, 6, 7, 8])

            service.friends.befriend(users[9], users[2])
            service.friends.befriend(users[9], users[7])
            let friendsPage = try await service.player.getFriendsScores(
                LeaderboardsV1.GetFriendsScoresRequest(leaderboardKey: "points", page: 1, pageSize: 10),
                context: service.context(for: users[9]))
            #expect(friendsPage.scores.map(\.userId) == [users[2], users[7], users[9]].map(\.hex))
            #expect(friendsPage.scores.map(\.position) == [1, 2, 3])
            let listed = try await service.player.getLeaderboard(
                LeaderboardsV1.GetLeaderboardRequest(leaderboardKey: "points"), context: service.context(for: users[9]))
            #expect(listed.leaderboard?.standing?.globalPosition == 10)
            #expect(listed.leaderboard?.standing?.friendsPosition == 3)
            let none = try await service.player.getLeaderboard(
                LeaderboardsV1.GetLeaderboardRequest(leaderboardKey: "points"), context: service.context(for: stranger))
            #expect(none.leaderboard?.standing == nil)
        }
    }

    @Test("a weekly board starts over at Monday 00:00 UTC and keeps last week readable")
    func weeklyBoardResetsAndServesPreviousVersion() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            let board = try await service.define("weekly", reset: .weekly)
            #expect(board?.currentVersion == 1)
            let alice = RaveID.random()
            #expect(try await service.submit(500, by: alice, to: "weekly").version == 1)
            // From Wednesday 12:00 to one microsecond before Monday 00:00, then across it.
            service.clock.advance(
                by: 4 * BoardDefinition.microsecondsPerDay + 12 * BoardDefinition.microsecondsPerHour - 1)
            #expect(try await service.submit(1, by: .random(), to: "weekly").version == 1)
            service.clock.advance(by: 1)
            let fresh = try await service.submit(10, by: alice, to: "weekly")
            #expect(fresh.version == 2 && fresh.newBest && fresh.highScore == 10)
            let lastWeek = try await service.player.getGlobalScores(
                LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "weekly", page: 1, pageSize: 10, version: 1),
                context: service.context(for: alice))
            #expect(lastWeek.scores.map(\.score) == [500, 1] && lastWeek.total == 2 && lastWeek.version == 1)
            await expectStatus(.invalidArgument) {
                _ = try await service.player.getGlobalScores(
                    LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "weekly", page: 1, pageSize: 10, version: 3),
                    context: service.context(for: alice))
            }
        }
    }

    @Test("monthly and daily versions count UTC periods")
    func versionsCountUTCPeriods() {
        var board = BoardDefinition(
            boardID: 1, appID: "a", key: "k", name: "k", sorter: 0, ascending: false, resetPeriod: .monthly,
            schedule: nil, active: true, versionsStart: ServiceFixture.start)
        let day = BoardDefinition.microsecondsPerDay
        // 2026-01-07 → 2026-02-01 is 25 days; 2026-03-01 is 28 days later.
        #expect(board.currentVersion(at: ServiceFixture.start + 24 * day) == 1)
        #expect(board.currentVersion(at: ServiceFixture.start + 25 * day - day / 2) == 2)
        #expect(board.currentVersion(at: ServiceFixture.start + 53 * day) == 3)
        board.resetPeriod = .daily
        #expect(board.currentVersion(at: ServiceFixture.start + day / 2 - 1) == 1)
        #expect(board.currentVersion(at: ServiceFixture.start + day / 2) == 2)
    }

    @Test("achievements unlock once and list with the unlocked flag")
    func achievementsUnlockIdempotently() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            for key in ["first-win", "collector"] {
                _ = try await service.admin.defineAchievement(
                    LeaderboardsV1.DefineAchievementRequest(
                        appId: service.app,
                        definition: LeaderboardsV1.AchievementDefinition(
                            key: key, name: key, imageUrl: "https://x/\(key)")),
                    context: Callers.admin(app: service.app))
            }
            let alice = RaveID.random()
            let unlock = LeaderboardsV1.UnlockAchievementRequest(achievementKey: "first-win")
            let first = try await service.player.unlockAchievement(unlock, context: service.context(for: alice))
            service.clock.advance(by: 5_000_000)
            let second = try await service.player.unlockAchievement(unlock, context: service.context(for: alice))
            #expect(first.newlyUnlocked && !second.newlyUnlocked)
            #expect(first.achievement?.unlockedAtUnixMs == second.achievement?.unlockedAtUnixMs)
            let list = try await service.player.listAchievements(
                LeaderboardsV1.ListAchievementsRequest(), context: service.context(for: alice))
            #expect(list.achievements.map(\.unlocked) == [false, true])
            await expectStatus(.notFound) {
                _ = try await service.player.unlockAchievement(
                    LeaderboardsV1.UnlockAchievementRequest(achievementKey: "nope"),
                    context: service.context(for: alice))
            }
        }
    }

    @Test("merging keeps the target's better score per board, unites achievements, and is idempotent")
    func mergeKeepsBetterScores() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("high")
            try await service.define("low", ascending: true)
            _ = try await service.admin.defineAchievement(
                LeaderboardsV1.DefineAchievementRequest(
                    appId: service.app, definition: LeaderboardsV1.AchievementDefinition(key: "a", name: "A")),
                context: Callers.admin(app: service.app))
            let source = RaveID.random()
            let target = RaveID.random()
            try await service.submit(90, by: source, to: "high")
            try await service.submit(40, by: target, to: "high")
            try await service.submit(90, by: source, to: "low")
            try await service.submit(40, by: target, to: "low")
            _ = try await service.player.unlockAchievement(
                LeaderboardsV1.UnlockAchievementRequest(achievementKey: "a"), context: service.context(for: source))

            let request = MergeV1.MergeUsersRequest(
                mergeId: "m-\(RaveID.random().hex)", sourceUserId: source.hex, targetUserId: target.hex)
            let serviceContext = Callers.context(user: nil, app: "")
            #expect(try await !service.merge.mergeUsers(request, context: serviceContext).alreadyApplied)
            #expect(try await service.merge.mergeUsers(request, context: serviceContext).alreadyApplied)

            let high = try await service.engine.board(appID: service.app, key: "high")
            let low = try await service.engine.board(appID: service.app, key: "low")
            #expect(try await service.engine.standing(of: target, in: high)?.score == 90)
            #expect(try await service.engine.standing(of: target, in: low)?.score == 40)
            #expect(try await service.engine.standing(of: source, in: high) == nil)
            let rows = try await pool.query("SELECT count(*) FROM scores WHERE user_id = $1", [source])
            #expect(try rows[0].decode(Int.self, at: 0) == 0)
            let list = try await service.player.listAchievements(
                LeaderboardsV1.ListAchievementsRequest(), context: service.context(for: target))
            #expect(list.achievements.map(\.unlocked) == [true])
        }
    }

    @Test("bad input gets a clear status")
    func badInputIsRejected() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("points")
            let me = service.context(for: .random())
            let player = service.player
            await expectStatus(.notFound) { try await service.submit(1, by: .random(), to: "unknown") }
            for (page, size) in [(0, 10), (1, 0), (1, 10_000)] {
                await expectStatus(.invalidArgument) {
                    _ = try await player.getGlobalScores(
                        LeaderboardsV1.GetGlobalScoresRequest(
                            leaderboardKey: "points", page: Int32(page), pageSize: Int32(size)), context: me)
                }
            }
            await expectStatus(.invalidArgument) {
                _ = try await player.getGlobalScoresAdjacent(
                    LeaderboardsV1.GetScoresAdjacentRequest(leaderboardKey: "points", adjacent: 101), context: me)
            }
            await expectStatus(.invalidArgument) {
                _ = try await player.getGlobalScores(
                    LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "points", page: 1, pageSize: 5, version: -1),
                    context: me)
            }
            // A score sent as a string (wire type 2 in field 2) fails decoding in the method table.
            let submit = try #require(player.methods.first { $0.name.hasSuffix("/SubmitScore") })
            let wrongType: [UInt8] = [0x0A, 0x06] + Array("points".utf8) + [0x12, 0x02] + Array("10".utf8)
            await expectStatus(.invalidArgument) {
                _ = try await submit.handler(wrongType, me)
            }
            await expectStatus(.permissionDenied) {
                _ = try await service.admin.defineLeaderboard(
                    LeaderboardsV1.DefineLeaderboardRequest(appId: service.app), context: me)
            }
        }
    }
}
