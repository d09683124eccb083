import RaveMessages
import RaveRPC
import RaveServices

/// `rave.leaderboards.v1.LeaderboardsAdmin`: definitions and index maintenance, for admin credentials only.
final class LeaderboardsAdminService: LeaderboardsV1.LeaderboardsAdminHandler {
    let engine: LeaderboardEngine

    init(engine: LeaderboardEngine) {
        self.engine = engine
    }

    func defineLeaderboard(
        _ request: LeaderboardsV1.DefineLeaderboardRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.DefineLeaderboardResponse {
        _ = try context.requireAdmin()
        guard let message = request.definition else {
            throw LeaderboardsError.invalidArgument("definition is required")
        }
        let board = try await engine.defineBoard(BoardDefinition(appID: request.appId, message: message))
        let index = try await engine.currentIndex(of: board)
        return LeaderboardsV1.DefineLeaderboardResponse(
            leaderboard: LeaderboardsV1.Leaderboard(
                definition: board.message, currentVersion: Int64(index.version),
                entryCount: Int64(index.read { $0.count })))
    }

    func defineAchievement(
        _ request: LeaderboardsV1.DefineAchievementRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.DefineAchievementResponse {
        _ = try context.requireAdmin()
        guard let message = request.definition else {
            throw LeaderboardsError.invalidArgument("definition is required")
        }
        guard !request.appId.isEmpty else { throw LeaderboardsError.invalidArgument("app_id is required") }
        let definition = AchievementDefinition(
            appID: request.appId, key: try RequestLimits.key(message.key, field: "key"), name: message.name,
            description: message.description, imageURL: message.imageUrl)
        try await engine.definitions.defineAchievement(definition)
        return LeaderboardsV1.DefineAchievementResponse(definition: definition.message)
    }

    func rebuildIndex(
        _ request: LeaderboardsV1.RebuildIndexRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.RebuildIndexResponse {
        _ = try context.requireAdmin()
        let board = try await engine.board(appID: request.appId, key: request.leaderboardKey)
        return LeaderboardsV1.RebuildIndexResponse(entryCount: Int64(try await engine.rebuildIndex(of: board)))
    }
}
