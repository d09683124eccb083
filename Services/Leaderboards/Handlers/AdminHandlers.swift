import RaveMessages
import RaveRPC
import RaveRuntime
import RaveServices

/// `rave.leaderboards.v1.LeaderboardsAdmin`: definitions and index maintenance, for admin credentials only.
final class AdminHandlers: LeaderboardsV1.LeaderboardsAdminHandler {
    let dependencies: LeaderboardsDependencies

    init(dependencies: LeaderboardsDependencies) {
        self.dependencies = dependencies
    }

    func defineLeaderboard(
        _ request: LeaderboardsV1.DefineLeaderboardRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.DefineLeaderboardResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        guard let message = request.definition else {
            throw LeaderboardsError.invalidArgument("definition is required")
        }
        let definition = try BoardDefinition(appID: request.appId, message: message)
        // Only the owner may change a board (a new sort direction rebuilds its index); refusing before the write
        // keeps "not processed" true.
        if let existing = try await definitions(appID: definition.appID, key: definition.key) {
            try await dependencies.ownership.acquire(existing)
        }
        let board = try await dependencies.engine.defineBoard(definition)
        // A new board, or one whose lease another instance took meanwhile: a define is create-or-replace, so the
        // owner named in the refusal can be sent the same call.
        try await dependencies.ownership.acquire(board)
        let index = try await dependencies.engine.currentIndex(of: board)
        return LeaderboardsV1.DefineLeaderboardResponse(
            leaderboard: LeaderboardsV1.Leaderboard(
                definition: board.message, currentVersion: Int64(index.version),
                entryCount: Int64(index.read { $0.count })))
    }

    private func definitions(appID: String, key: String) async throws -> BoardDefinition? {
        try await dependencies.engine.definitions.board(appID: appID, key: key)
    }

    func defineAchievement(
        _ request: LeaderboardsV1.DefineAchievementRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.DefineAchievementResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        guard let message = request.definition else {
            throw LeaderboardsError.invalidArgument("definition is required")
        }
        _ = try RequestLimits.id(request.appId, field: "app_id")
        let definition = AchievementDefinition(
            appID: request.appId, key: try RequestLimits.key(message.key, field: "key"), name: message.name,
            description: message.description, imageURL: message.imageUrl)
        try await dependencies.engine.definitions.defineAchievement(definition)
        return LeaderboardsV1.DefineAchievementResponse(definition: definition.message)
    }

    func rebuildIndex(
        _ request: LeaderboardsV1.RebuildIndexRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.RebuildIndexResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        _ = try RequestLimits.id(request.appId, field: "app_id")
        let board = try await dependencies.engine.board(appID: request.appId, key: request.leaderboardKey)
        try await dependencies.ownership.acquire(board)
        return LeaderboardsV1.RebuildIndexResponse(
            entryCount: Int64(try await dependencies.engine.rebuildIndex(of: board)))
    }
}
