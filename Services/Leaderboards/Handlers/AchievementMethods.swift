import RaveMessages
import RaveRPC

extension PlayerHandlers {
    func listAchievements(
        _ request: LeaderboardsV1.ListAchievementsRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.ListAchievementsResponse {
        let caller = try context.requireCaller()
        let userID = try await optionalPlayerID(of: caller) ?? Self.nobody
        let progress = try await dependencies.achievements.progress(appID: caller.appID, userID: userID)
        return LeaderboardsV1.ListAchievementsResponse(achievements: progress.map(\.message))
    }

    /// Idempotent: a second unlock returns the first unlock's time and `newly_unlocked` false.
    func unlockAchievement(
        _ request: LeaderboardsV1.UnlockAchievementRequest, context: RequestContext
    ) async throws -> LeaderboardsV1.UnlockAchievementResponse {
        let caller = try context.requireUser()
        guard !caller.scopes.contains(Self.guestScope) else {
            throw LeaderboardsError.failedPrecondition("anonymous players cannot unlock achievements; sign in first")
        }
        let userID = try await playerID(of: caller)
        let key = try RequestLimits.key(request.achievementKey, field: "achievement_key")
        let (progress, newlyUnlocked) = try await dependencies.achievements.unlock(
            appID: caller.appID, key: key, userID: userID, at: dependencies.engine.clock.now())
        if newlyUnlocked {
            // The store wrote the "achievement.unlocked" outbox event with the unlock.
            context.logger.info("achievement unlocked", [("achievement", key), ("user", userID.hex)])
        }
        return LeaderboardsV1.UnlockAchievementResponse(achievement: progress.message, newlyUnlocked: newlyUnlocked)
    }
}
