import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTestSupport
import Testing

@testable import Leaderboards

/// A game keeps a merged-away player's token: everything it submits or reads under the old id is the target's.
@Suite("Leaderboards: calls naming a merged-away player")
struct MergedIDTests {
    @Test("scores under the old id, before and after the merge, end on the target once; reads see the target")
    func scoresUnderTheOldIDLandOnTheTarget() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("high")
            let (bob, guest) = (RaveID.random(), RaveID.random())
            try await service.submit(500, by: guest, to: "high")
            try await service.submit(300, by: bob, to: "high")
            try await service.merge(guest, into: bob)

            service.clock.advance(by: 1)
            let late = try await service.submit(900, by: guest, to: "high")
            #expect(late.newBest && late.highScore == 900 && late.globalPosition == 1)
            service.clock.advance(by: 1)
            let asTarget = try await service.submit(800, by: bob, to: "high")
            #expect(!asTarget.newBest && asTarget.highScore == 900)

            #expect(try await service.board("high") == [Ranked(bob, 900)], "one entry: the best of both accounts")
            #expect(try await service.rows(of: guest) == 0)
            let mine = try await service.player.getMyGlobalScores(
                LeaderboardsV1.GetMyScoresRequest(leaderboardKey: "high", pageSize: 10),
                context: service.context(for: guest))
            #expect(mine.scores.map(\.userId) == [bob.hex], "a read under the old id shows the target")
            #expect(try await service.rebuiltBoard("high") == [Ranked(bob, 900)], "the table agrees with the index")
        }
    }

    @Test("achievements unlocked under the old id after the merge are the target's")
    func unlocksUnderTheOldIDLandOnTheTarget() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            _ = try await service.admin.defineAchievement(
                LeaderboardsV1.DefineAchievementRequest(
                    appId: service.app, definition: LeaderboardsV1.AchievementDefinition(key: "first", name: "First")),
                context: Callers.admin(app: service.app))
            let (bob, guest) = (RaveID.random(), RaveID.random())
            try await service.merge(guest, into: bob)
            let unlocked = try await service.player.unlockAchievement(
                LeaderboardsV1.UnlockAchievementRequest(achievementKey: "first"), context: service.context(for: guest))
            #expect(unlocked.newlyUnlocked)
            let again = try await service.player.unlockAchievement(
                LeaderboardsV1.UnlockAchievementRequest(achievementKey: "first"), context: service.context(for: bob))
            #expect(!again.newlyUnlocked, "one unlock, the target's")
            let rows = try await pool.query("SELECT count(*) FROM achievement_unlocks WHERE user_id = $1", [guest])
            #expect(try rows[0].decode(Int.self, at: 0) == 0)
        }
    }

    @Test("scores racing the merge under both ids all end on the target, once, with the best of them")
    func scoresRacingTheMergeEndOnTheTarget() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("high")
            let (bob, guest) = (RaveID.random(), RaveID.random())
            try await service.submit(50, by: guest, to: "high")
            try await service.submit(40, by: bob, to: "high")
            let merges = service.engine.merges
            // Every player call is tracked as the service's RPC wiring tracks it (`LeaderboardsMain.services`).
            async let merged: Void = service.merge(guest, into: bob)
            let results = await ConcurrentCalls.run(60) { call in
                try await merges.tracking {
                    try await service.submit(Int64(100 + call), by: call.isMultiple(of: 2) ? guest : bob, to: "high")
                }
            }
            try await merged
            #expect(ConcurrentCalls.failures(results).isEmpty)
            #expect(try await service.board("high") == [Ranked(bob, 159)])
            #expect(try await service.rows(of: guest) == 0)
            #expect(try await service.rebuiltBoard("high") == [Ranked(bob, 159)])
        }
    }

    @Test("a merge applied by another instance reaches this one's index, and what it wrote under the old id moves")
    func anotherInstancesMergeIsSweptHere() async throws {
        try await TestDatabase.withPool { pool in
            let logger = Logger(label: "merged-id-test", level: .critical)
            let mergingRecord = MergedUsers(pool: pool, loop: TestDatabase.group.next(), logger: logger)
            let servingRecord = MergedUsers(pool: pool, loop: TestDatabase.group.next(), logger: logger)
            let merging = ServiceFixture(pool: pool, merges: mergingRecord)
            // The instance players' calls reach (it owns the board); the merge reaches the other one.
            let serving = ServiceFixture(pool: pool, app: merging.app, merges: servingRecord)
            try await mergingRecord.listening {
                try await servingRecord.listening {
                    try await serving.define("high")
                    let (bob, guest) = (RaveID.random(), RaveID.random())
                    try await serving.submit(500, by: guest, to: "high")
                    try await serving.submit(300, by: bob, to: "high")
                    // A call at the serving instance that resolved the guest before the merge is still running;
                    // when it ends, it has written a 700 under the guest's id after the merge moved the rows.
                    let gate = ShutdownLatch()
                    let call = Task { await servingRecord.tracking { await gate.wait() } }
                    try await eventually { servingRecord.runningCalls == 1 }
                    try await merging.merge(guest, into: bob)
                    try await eventually { try await servingRecord.resolve(guest) == bob }
                    let board = try await serving.engine.board(appID: serving.app, key: "high")
                    try await pool.query(
                        "INSERT INTO scores (board_id, version, user_id, score, achieved_at) VALUES ($1, 1, $2, 700, $3)",
                        [board.boardID, guest, PostgresTimestamp(microsecondsSinceEpoch: ServiceFixture.start)])
                    gate.open()
                    await call.value

                    try await eventually { try await serving.rows(of: guest) == 0 }
                    try await eventually { try await serving.board("high") == [Ranked(bob, 700)] }
                    let late = try await serving.submit(900, by: guest, to: "high")
                    #expect(late.highScore == 900)
                    #expect(try await serving.board("high") == [Ranked(bob, 900)])
                    #expect(try await serving.rows(of: guest) == 0)
                }
            }
        }
    }
}

struct Ranked: Hashable, CustomStringConvertible {
    var userID: RaveID
    var score: Int64

    init(_ userID: RaveID, _ score: Int64) {
        self.userID = userID
        self.score = score
    }

    var description: String { "\(userID.hex.prefix(8)):\(score)" }
}

extension ServiceFixture {
    /// Merges as identity's saga does, with the call a service peer makes.
    func merge(_ source: RaveID, into target: RaveID) async throws {
        _ = try await merge.mergeUsers(
            MergeV1.MergeUsersRequest(
                mergeId: "m-\(RaveID.random().hex)", sourceUserId: source.hex, targetUserId: target.hex),
            context: Callers.context(user: nil, app: ""))
    }

    /// The board's first page as players read it.
    func board(_ key: String) async throws -> [Ranked] {
        let page = try await player.getGlobalScores(
            LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: key, page: 1, pageSize: 100),
            context: context(for: nil))
        return page.scores.compactMap { entry in RaveID(entry.userId).map { Ranked($0, entry.score) } }
    }

    /// The board rebuilt from the table, as a restarted instance would load it.
    func rebuiltBoard(_ key: String) async throws -> [Ranked] {
        let rebuilt = LeaderboardEngine(pool: pool, clock: clock.wallClock)
        let definition = try await rebuilt.board(appID: app, key: key)
        return try await rebuilt.globalPage(of: definition, version: nil, page: 1, pageSize: 100).scores.map {
            Ranked($0.userID, $0.score)
        }
    }

    /// Rows of `user` in the scores table.
    func rows(of user: RaveID) async throws -> Int {
        try await pool.query("SELECT count(*) FROM scores WHERE user_id = $1", [user])[0].decode(Int.self, at: 0)
    }
}
