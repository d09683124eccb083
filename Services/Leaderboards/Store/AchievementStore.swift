import RaveEvents
import RaveMessages
import RavePostgres

/// An achievement with one player's progress on it.
struct AchievementProgress: Sendable, Hashable {
    var definition: AchievementDefinition
    /// Microseconds since the Unix epoch; nil while locked.
    var unlockedAt: Int64?
}

/// Achievement unlocks in PostgreSQL.
struct AchievementStore: Sendable {
    let pool: PostgresPool

    /// The outbox topic of a first unlock; the payload is a `LeaderboardsV1.AchievementUnlockedEvent` and the key
    /// the user id, so one player's unlocks are delivered in order.
    static let unlockedTopic = EventTopic.achievementUnlocked

    static let selectProgress = PostgresStatement(
        name: "leaderboards_select_achievement_progress",
        sql: """
            SELECT a.app_id, a.key, a.name, a.description, a.image_url, u.unlocked_at
            FROM achievements a
            LEFT JOIN achievement_unlocks u ON u.app_id = a.app_id AND u.key = a.key AND u.user_id = $2
            WHERE a.app_id = $1 ORDER BY a.key
            """)
    static let selectOneProgress = PostgresStatement(
        name: "leaderboards_select_one_achievement_progress",
        sql: """
            SELECT a.app_id, a.key, a.name, a.description, a.image_url, u.unlocked_at
            FROM achievements a
            LEFT JOIN achievement_unlocks u ON u.app_id = a.app_id AND u.key = a.key AND u.user_id = $2
            WHERE a.app_id = $1 AND a.key = $3
            """)
    static let insertUnlock = PostgresStatement(
        name: "leaderboards_insert_unlock",
        sql: """
            INSERT INTO achievement_unlocks (app_id, key, user_id, unlocked_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (app_id, user_id, key) DO NOTHING RETURNING unlocked_at
            """)

    func progress(appID: String, userID: RaveID) async throws -> [AchievementProgress] {
        try await pool.execute(Self.selectProgress, [appID, userID]).map(Self.progress(from:))
    }

    /// Unlocks the achievement unless it already is; returns its state and whether this call unlocked it.
    func unlock(
        appID: String, key: String, userID: RaveID, at time: Int64
    ) async throws -> (
        AchievementProgress, newlyUnlocked: Bool
    ) {
        try await pool.transaction { transaction in
            let current = try await transaction.execute(Self.selectOneProgress, [appID, userID, key])
            guard let row = current.first else { throw LeaderboardsError.unknownAchievement(key) }
            var progress = try Self.progress(from: row)
            if progress.unlockedAt != nil { return (progress, false) }
            let inserted = try await transaction.execute(
                Self.insertUnlock, [appID, key, userID, PostgresTimestamp(microsecondsSinceEpoch: time)])
            guard let unlocked = inserted.first else {
                // A concurrent unlock won the race; report its time.
                let again = try await transaction.execute(Self.selectOneProgress, [appID, userID, key])
                guard let row = again.first else { throw LeaderboardsError.unknownAchievement(key) }
                return (try Self.progress(from: row), false)
            }
            let unlockedAt = try unlocked.decode(PostgresTimestamp.self, at: 0).microsecondsSinceEpoch
            progress.unlockedAt = unlockedAt
            // In the unlock's transaction, so the event exists exactly when the unlock does.
            let event = LeaderboardsV1.AchievementUnlockedEvent(
                userId: userID.hex, appId: appID, achievementKey: key, achievementName: progress.definition.name,
                unlockedAtUnixMs: unlockedAt / 1000)
            try await EventOutbox.publish(
                in: transaction, topic: Self.unlockedTopic, key: userID.hex, payload: event.protobufBytes())
            return (progress, true)
        }
    }

    private static func progress(from row: PostgresRow) throws -> AchievementProgress {
        AchievementProgress(
            definition: AchievementDefinition(
                appID: try row.decode(String.self, column: "app_id"), key: try row.decode(String.self, column: "key"),
                name: try row.decode(String.self, column: "name"),
                description: try row.decode(String.self, column: "description"),
                imageURL: try row.decode(String.self, column: "image_url")),
            unlockedAt: try row.decode(PostgresTimestamp?.self, column: "unlocked_at")?.microsecondsSinceEpoch)
    }
}
