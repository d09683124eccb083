import RaveMessages
import RaveRPC
import RaveServices

/// The operator reads of `rave.leaderboards.v1.LeaderboardsAdmin`: an app's boards and achievements, a board's top
/// scores and a player's standing, answered as the player methods answer them.
extension AdminHandlers {
    func listLeaderboards(
        _ request: LeaderboardsV1.ListAppLeaderboardsRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ListLeaderboardsResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        _ = try RequestLimits.id(request.appId, field: "app_id")
        let players = PlayerHandlers(dependencies: dependencies)
        var result: [LeaderboardsV1.Leaderboard] = []
        for board in try await dependencies.engine.definitions.boards(appID: request.appId) {
            result.append(try await players.describe(board, userID: nil, friendIDs: []))
        }
        return LeaderboardsV1.ListLeaderboardsResponse(leaderboards: result)
    }

    /// From the board's index, so this instance takes the board's lease (like the player methods reading scores).
    func getTopScores(
        _ request: LeaderboardsV1.GetTopScoresRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ScoresResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        _ = try RequestLimits.id(request.appId, field: "app_id")
        let count = try RequestLimits.topCounts.check(request.count, orThrow: LeaderboardsError.invalidArgument)
        let board = try await dependencies.engine.board(
            appID: request.appId, key: RequestLimits.key(request.leaderboardKey, field: "leaderboard_key"))
        try await dependencies.ownership.acquire(board)
        let page = try await dependencies.engine.globalPage(of: board, version: nil, page: 1, pageSize: count)
        return await PlayerHandlers(dependencies: dependencies).response(page, appID: request.appId)
    }

    /// Takes no lease: a board this instance does not own is read from the table.
    func getUserStanding(
        _ request: LeaderboardsV1.GetUserStandingRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.GetLeaderboardResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        _ = try RequestLimits.id(request.appId, field: "app_id")
        let user = try await dependencies.engine.merges.resolve(try RequestLimits.id(request.userId, field: "user_id"))
        let board = try await dependencies.engine.board(
            appID: request.appId, key: RequestLimits.key(request.leaderboardKey, field: "leaderboard_key"))
        // Social may name a friend merged away since: the friend's scores are under the target.
        let friends = try await dependencies.engine.merges.resolve(
            try await dependencies.friends.friendIDs(of: user, appID: request.appId))
        return LeaderboardsV1.GetLeaderboardResponse(
            leaderboard: try await PlayerHandlers(dependencies: dependencies).describe(
                board, userID: user, friendIDs: friends))
    }

    func listAchievements(
        _ request: LeaderboardsV1.ListAppAchievementsRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ListAchievementDefinitionsResponse {
        try await dependencies.adminScope.requireScope(context, applicationID: request.appId)
        _ = try RequestLimits.id(request.appId, field: "app_id")
        // Progress of nobody: every definition, none unlocked.
        let progress = try await dependencies.achievements.progress(
            appID: request.appId, userID: PlayerHandlers.nobody)
        return LeaderboardsV1.ListAchievementDefinitionsResponse(definitions: progress.map(\.definition.message))
    }
}
