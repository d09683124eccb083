import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Leaderboards

@Suite("Achievement events")
struct AchievementEventTests {
    @Test("the first unlock writes one leaderboards.achievement_unlocked outbox event; repeating it writes none")
    func firstUnlockEnqueuesOneEvent() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            _ = try await service.admin.defineAchievement(
                LeaderboardsV1.DefineAchievementRequest(
                    appId: service.app,
                    definition: LeaderboardsV1.AchievementDefinition(key: "first-win", name: "First win")),
                context: Callers.admin(app: service.app))
            let alice = RaveID.random()
            let unlock = LeaderboardsV1.UnlockAchievementRequest(achievementKey: "first-win")
            let first = try await service.player.unlockAchievement(unlock, context: service.context(for: alice))
            service.clock.advance(by: 1_000_000)
            let second = try await service.player.unlockAchievement(unlock, context: service.context(for: alice))
            #expect(first.newlyUnlocked && !second.newlyUnlocked)

            let rows = try await pool.query(
                "SELECT topic, payload FROM outbox_events WHERE key = $1 ORDER BY id", [alice.hex])
            #expect(rows.count == 1)
            let topic = try rows.first?.decode(String.self, column: "topic")
            #expect(topic == "leaderboards.achievement_unlocked")
            let payload = try rows.first?.decode([UInt8].self, column: "payload") ?? []
            let event = try LeaderboardsV1.AchievementUnlockedEvent(protobufBytes: payload)
            #expect(
                event
                    == LeaderboardsV1.AchievementUnlockedEvent(
                        userId: alice.hex, appId: service.app, achievementKey: "first-win",
                        achievementName: "First win", unlockedAtUnixMs: ServiceFixture.start / 1000))
        }
    }

    @Test("an unknown achievement writes no event")
    func unknownAchievementEnqueuesNothing() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            let alice = RaveID.random()
            await expectStatus(.notFound) {
                _ = try await service.player.unlockAchievement(
                    .init(achievementKey: "missing"), context: service.context(for: alice))
            }
            let rows = try await pool.query("SELECT count(*) AS n FROM outbox_events")
            #expect(try rows.first?.decode(Int64.self, column: "n") == 0)
        }
    }
}
