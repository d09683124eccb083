import Foundation
import RaveMerges
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Leaderboards

@Suite("Leaderboards: exporting an account")
struct ExportTests {
    private static func participant(_ service: ServiceFixture) -> LeaderboardsExportParticipant {
        LeaderboardsExportParticipant(
            dependencies: LeaderboardsDependencies(
                engine: service.engine, friends: service.friends, profiles: service.profiles))
    }

    private static func export(
        _ service: ServiceFixture, _ request: ExportV1.ExportUserRequest
    ) async throws -> ExportChecks.Export {
        let participant = participant(service)
        return try await ExportChecks.export(request) {
            try await participant.exportUser($0, context: Callers.context(user: nil, app: ""))
        }
    }

    @Test(
        "every score (every board and version), unlock and merge of the user and its merged ids, in the documented shapes; nothing of another player's"
    )
    func exportHoldsEveryRowOfTheUserAndMergedIDsAndNoOtherPlayers() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("high")
            try await service.define("weekly", reset: .weekly)
            for key in ["first", "second"] {
                _ = try await service.admin.defineAchievement(
                    LeaderboardsV1.DefineAchievementRequest(
                        appId: service.app, definition: LeaderboardsV1.AchievementDefinition(key: key, name: key)),
                    context: Callers.admin(app: service.app))
            }
            let (user, merged, namedOnly, other, stranger) = (
                RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random(), RaveID.random()
            )
            for (index, player) in [user, merged, other].enumerated() {
                try await service.submit(Int64(100 + index), by: player, to: "high")
                try await service.submit(Int64(10 + index), by: player, to: "weekly")
                _ = try await service.player.unlockAchievement(
                    LeaderboardsV1.UnlockAchievementRequest(achievementKey: "first"),
                    context: service.context(for: player))
            }
            // A new week: the first week's scores are version 1, kept in the table.
            service.clock.advance(by: 8 * 24 * 3600 * 1_000_000)
            try await service.submit(20, by: user, to: "weekly")
            try await service.submit(21, by: other, to: "weekly")
            _ = try await service.merge.mergeUsers(
                MergeV1.MergeUsersRequest(mergeId: "merge-export", sourceUserId: merged.hex, targetUserId: user.hex),
                context: Callers.context(user: nil, app: ""))
            try await service.merge(stranger, into: other)
            // Rows a call left under the merged id after the merge, and under an id only the request names.
            _ = try await pool.query(
                """
                INSERT INTO scores (board_id, version, user_id, score, achieved_at)
                SELECT board_id, 1, u, -9007199254740993, now() FROM leaderboards, unnest($1::uuid[]) AS u
                WHERE key = 'high'
                """, [[merged, namedOnly]])
            _ = try await pool.query(
                "INSERT INTO achievement_unlocks (app_id, key, user_id, unlocked_at) VALUES ($1, 'second', $2, now())",
                [service.app, namedOnly])

            let request = ExportV1.ExportUserRequest(
                exportId: "export-1", userId: user.hex, mergedUserIds: [namedOnly.hex])
            let before = try await ExportChecks.contents(of: pool)
            let export = try await Self.export(service, request)
            #expect(try await ExportChecks.contents(of: pool) == before)
            #expect(export.pages == 1)
            #expect(export.order == ["scores", "achievements", "merges"])

            let scores = export.records("scores")
            #expect(
                scores.allSatisfy {
                    Set($0.keys) == ["app_id", "leaderboard_key", "version", "user_id", "score", "achieved_at"]
                        && $0["app_id"] as? String == service.app && ExportChecks.isTime($0["achieved_at"])
                })
            // The merge kept the better of the two (the merged id's) on each board and week.
            #expect(
                Set(scores.map { "\($0["leaderboard_key"]!) \($0["version"]!) \($0["user_id"]!) \($0["score"]!)" })
                    == [
                        "high 1 \(user.hex) 101", "weekly 1 \(user.hex) 11", "weekly 2 \(user.hex) 20",
                        "high 1 \(merged.hex) -9007199254740993", "high 1 \(namedOnly.hex) -9007199254740993",
                    ])
            #expect(scores.allSatisfy { $0["version"] is Int && $0["score"] is String })
            let thisWeek = scores.first { $0["leaderboard_key"] as? String == "weekly" && $0["version"] as? Int == 2 }
            #expect(thisWeek?["achieved_at"] as? String == "2026-01-15T12:00:00.000Z")

            let achievements = export.records("achievements")
            #expect(
                achievements.allSatisfy {
                    Set($0.keys) == ["app_id", "achievement_key", "user_id", "unlocked_at"]
                        && $0["app_id"] as? String == service.app && ExportChecks.isTime($0["unlocked_at"])
                })
            #expect(
                Set(achievements.map { "\($0["achievement_key"]!) \($0["user_id"]!)" })
                    == ["first \(user.hex)", "second \(namedOnly.hex)"])
            // Unlocks unite keeping the earlier time: the user's own, at the fixture's start.
            #expect(
                achievements.first { $0["user_id"] as? String == user.hex }?["unlocked_at"] as? String
                    == "2026-01-07T12:00:00.000Z")

            let merges = export.records("merges")
            #expect(merges.count == 1)
            #expect(Set(merges.first?.keys.map { $0 } ?? []) == ["merge_id", "source_id", "target_id", "applied_at"])
            #expect(merges.first?["merge_id"] as? String == "merge-export")
            #expect(merges.first?["source_id"] as? String == merged.hex)
            #expect(merges.first?["target_id"] as? String == user.hex)
            #expect(ExportChecks.isTime(merges.first?["applied_at"]))

            let text = export.raw.values.joined().map { String(decoding: $0, as: UTF8.self) }.joined()
            for id in [other, stranger] { #expect(!text.contains(id.hex)) }
        }
    }

    @Test("more rows than a page: the pages hold every row once, within the limits, also in tiny pages")
    func exportPagesConcatenateToEveryRowOnce() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            try await service.define("high")
            try await service.define("weekly", reset: .weekly)
            let (user, merged) = (RaveID.random(), RaveID.random())
            // One row per board and version: 1,500 versions of one board, 800 of the other, half the user's.
            _ = try await pool.query(
                """
                INSERT INTO scores (board_id, version, user_id, score, achieved_at)
                SELECT board_id, v, CASE WHEN v % 2 = 0 THEN $1 ELSE $2 END, v, now()
                FROM leaderboards, generate_series(1, CASE WHEN key = 'high' THEN 1500 ELSE 800 END) AS v
                """, [user, merged])
            _ = try await pool.query(
                """
                INSERT INTO achievements (app_id, key, name) SELECT $1, 'a' || n, 'A' FROM generate_series(1, 20) AS n;
                """, [service.app])
            _ = try await pool.query(
                """
                INSERT INTO achievement_unlocks (app_id, key, user_id, unlocked_at)
                SELECT $1, 'a' || n, u, now() FROM generate_series(1, 20) AS n, unnest($2::uuid[]) AS u
                """, [service.app, [user, merged]])
            let request = ExportV1.ExportUserRequest(
                exportId: "export-many", userId: user.hex, mergedUserIds: [merged.hex])
            let export = try await Self.export(service, request)
            #expect(export.pages == 3)
            #expect(export.pageSizes.allSatisfy { $0 <= ExportPage.maximumRecords })
            let scores = export.records("scores").map {
                "\($0["leaderboard_key"]!) \($0["version"]!) \($0["user_id"]!)"
            }
            #expect(scores.count == 2300 && Set(scores).count == 2300)
            #expect(export.records("achievements").count == 40)

            // Tiny pages: 7 records or 500 bytes at most, resuming inside and across sections.
            let small = try await ExportChecks.export(request, maximumPages: 2000) { page in
                ExportV1.ExportUserResponse(
                    try await UserExport(page).page(
                        of: ExportStore.sections, ids: [user, merged], in: pool, maximumRecords: 7,
                        maximumBytes: 500))
            }
            #expect(small.pageSizes.allSatisfy { (1...7).contains($0) })
            #expect(small.pageBytes.allSatisfy { $0 <= 500 })
            #expect(small.pages > 2340 / 7)
            for section in ["scores", "achievements"] {
                let records = small.raw[section] ?? []
                #expect(records.count == export.raw[section]?.count)
                #expect(Set(records) == Set(export.raw[section] ?? []))
            }
        }
    }

    @Test("a cursor this service did not write, a bad id or export id is INVALID_ARGUMENT; only identity may ask")
    func exportRefusesBadRequestsAndCallersOtherThanIdentity() async throws {
        try await TestDatabase.withPool { pool in
            let service = ServiceFixture(pool: pool)
            let user = RaveID.random().hex
            try await ExportChecks.serving(Self.participant(service), as: "leaderboards", group: TestDatabase.group) {
                identity, gateway in
                let good = ExportV1.ExportUserRequest(exportId: "export-1", userId: user)
                #expect(try await identity.exportUser(good).nextCursor == "")
                let valid = ExportCursor(section: "scores", key: ["1", "2", user]).text
                let resumed = try await identity.exportUser(.init(exportId: "e", userId: user, cursor: valid))
                #expect(resumed.nextCursor == "")
                let ownBad = [
                    ExportCursor(section: "scores", key: ["x", "2", user]),
                    ExportCursor(section: "scores", key: ["1", "2", "not-an-id"]),
                    ExportCursor(section: "scores", key: ["1", "2"]),
                    ExportCursor(section: "achievements", key: ["app", user, "a\u{0}"]),
                ].map { ExportV1.ExportUserRequest(exportId: "e", userId: user, cursor: $0.text) }
                for request in ExportChecks.malformedRequests(user: user) + ownBad {
                    let code = await ErasureChecks.status { _ = try await identity.exportUser(request) }
                    #expect(code == .invalidArgument, "\(request)")
                }
                do {
                    _ = try await identity.exportUser(.init(exportId: "e", userId: user, cursor: "garbage"))
                    Issue.record("a bad cursor was accepted")
                } catch let error as RPCError {
                    #expect(error.message == "cursor is not a next_cursor this service returned")
                }
                let refused = await ErasureChecks.status { _ = try await gateway.exportUser(good) }
                #expect(refused == .permissionDenied)
            }
        }
    }
}
