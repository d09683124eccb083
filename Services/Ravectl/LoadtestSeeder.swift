import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTransport

/// Prepares the boards a load test uses: defines missing ones, fills each with one score per seeded player, and
/// has the service rebuild its index.
///
/// With `--database-url` the scores go straight into leaderboards' `scores` table with a binary COPY (a million
/// rows in about a second); without it they are submitted through the service, which is slower but needs no
/// database access. A board that already holds a score for every seeded player is left alone, so repeated runs
/// start at once.
struct LoadtestSeeder {
    var connection: RPCConnection
    var app: String
    var users: Int
    var databaseURL: String?
    var group: EventLoopGroup

    static let copyRowsPerStatement = 1_000_000

    private var adminOptions: CallOptions {
        CallOptions(
            timeout: .seconds(900),
            metadata: [MetadataKey.callerUserID: "", MetadataKey.callerAppID: app, MetadataKey.callerScopes: "admin"])
    }

    /// Makes sure every board exists and holds `users` scores.
    func prepare(boardKeys: [String]) async throws {
        let player = LeaderboardsV1.LeaderboardsClient(caller: connection)
        let admin = LeaderboardsV1.LeaderboardsAdminClient(caller: connection)
        for (number, key) in boardKeys.enumerated() {
            var existing: Int64 = 0
            if let count = try await entryCount(of: key, player: player) {
                existing = count
            } else {
                let definition = LeaderboardsV1.LeaderboardDefinition(
                    key: key, name: "Load test \(number + 1)", sorter: Int32(number), active: true)
                _ = try await admin.defineLeaderboard(
                    LeaderboardsV1.DefineLeaderboardRequest(appId: app, definition: definition), options: adminOptions)
            }
            if existing >= users {
                print("board \(key): \(existing) entries, already seeded")
                continue
            }
            let started = ContinuousClock.now
            if let databaseURL {
                try await copyScores(board: number, key: key, databaseURL: databaseURL)
                let rebuilt = try await admin.rebuildIndex(
                    LeaderboardsV1.RebuildIndexRequest(appId: app, leaderboardKey: key), options: adminOptions)
                print("board \(key): \(rebuilt.entryCount) entries seeded by COPY in \(started.duration(to: .now))")
            } else {
                try await submitScores(board: number, key: key)
                print("board \(key): \(users) entries seeded through SubmitScore in \(started.duration(to: .now))")
            }
        }
    }

    /// The board's entry count, or nil when it is not defined yet.
    private func entryCount(of key: String, player: LeaderboardsV1.LeaderboardsClient) async throws -> Int64? {
        do {
            let found = try await player.getLeaderboard(
                LeaderboardsV1.GetLeaderboardRequest(leaderboardKey: key), options: adminOptions)
            return found.leaderboard?.entryCount ?? 0
        } catch {
            if error.code == .notFound { return nil }
            throw error
        }
    }

    // MARK: - COPY

    static let selectBoardID = PostgresStatement(
        name: "loadtest_board_id", sql: "SELECT board_id FROM leaderboards WHERE app_id = $1 AND key = $2")
    static let deleteScores = PostgresStatement(
        name: "loadtest_delete_scores", sql: "DELETE FROM scores WHERE board_id = $1 AND version = 1")

    /// Replaces the board's version 1 with one seeded score per player, in COPY statements of a million rows.
    private func copyScores(board: Int, key: String, databaseURL: String) async throws {
        let database = try await PostgresConnection.connect(
            to: databaseURL, on: group.next(), defaultTimeout: .seconds(900))
        defer { database.close() }
        guard let row = try await database.execute(Self.selectBoardID, [app, key]).first else {
            throw UsageError("board \(key) of app \(app) is not in the database at --database-url")
        }
        let boardID = try row.decode(Int64.self, at: 0)
        try await database.execute(Self.deleteScores, [boardID])
        // Distinct, fixed times in the past: ties on score then resolve by time as they would in production.
        let baseTime: Int64 = 1_767_225_600_000_000
        var first = 0
        while first < users {
            let last = min(users, first + Self.copyRowsPerStatement)
            try await database.copyFrom(
                table: "scores", columns: ["board_id", "version", "user_id", "score", "achieved_at"]
            ) { writer in
                for index in first..<last {
                    writer.appendRow(
                        boardID, Int32(1), LoadtestPlan.userID(index),
                        LoadtestPlan.seededScore(user: index, board: board),
                        PostgresTimestamp(microsecondsSinceEpoch: baseTime + Int64(index)))
                }
            }
            first = last
        }
        try await database.execute(PostgresStatement(name: "loadtest_analyze", sql: "ANALYZE scores"))
    }

    // MARK: - Through the service

    /// Submits one score per player, 256 calls in flight.
    private func submitScores(board: Int, key: String) async throws {
        let client = LeaderboardsV1.LeaderboardsClient(caller: connection)
        let users = self.users
        let app = self.app
        try await withThrowingTaskGroup(of: Void.self) { group in
            let lanes = min(256, users)
            for lane in 0..<lanes {
                group.addTask {
                    var index = lane
                    while index < users {
                        let options = CallOptions(
                            timeout: .seconds(30),
                            metadata: [
                                MetadataKey.callerUserID: LoadtestPlan.userID(index).hex, MetadataKey.callerAppID: app,
                                MetadataKey.callerScopes: "player authenticated",
                            ])
                        _ = try await client.submitScore(
                            LeaderboardsV1.SubmitScoreRequest(
                                leaderboardKey: key, score: LoadtestPlan.seededScore(user: index, board: board)),
                            options: options)
                        index += lanes
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
