import RaveMessages
import RavePostgres

extension BoardDefinition {
    /// The definition as the contract shows it (times in Unix milliseconds).
    var message: LeaderboardsV1.LeaderboardDefinition {
        LeaderboardsV1.LeaderboardDefinition(
            key: key, name: name, sorter: sorter, ascending: ascending,
            resetInterval: LeaderboardsV1.ResetInterval(rawValue: Int32(resetPeriod.rawValue)),
            schedule: schedule.map {
                LeaderboardsV1.Schedule(startUnixMs: $0.lowerBound / 1000, endUnixMs: $0.upperBound / 1000)
            },
            active: active)
    }

    /// A definition from an admin request, validated; the board id and version start come from the table.
    init(appID: String, message: LeaderboardsV1.LeaderboardDefinition) throws(LeaderboardsError) {
        _ = try RequestLimits.id(appID, field: "app_id")
        _ = try RequestLimits.key(message.key, field: "key")
        guard case let period? = ResetPeriod(rawValue: Int16(truncatingIfNeeded: message.resetInterval.rawValue)),
            message.resetInterval.rawValue <= 4
        else {
            throw .invalidArgument("reset_interval \(message.resetInterval.rawValue) is not one of 0…4")
        }
        var schedule: Range<Int64>?
        if let window = message.schedule {
            guard window.startUnixMs < window.endUnixMs else {
                throw .invalidArgument("schedule start must be before its end")
            }
            guard period == .none else {
                throw .invalidArgument("a board has a reset interval or a schedule, not both")
            }
            schedule = window.startUnixMs * 1000..<window.endUnixMs * 1000
        }
        self.init(
            boardID: 0, appID: appID, key: message.key, name: message.name, sorter: message.sorter,
            ascending: message.ascending, resetPeriod: period, schedule: schedule, active: message.active,
            versionsStart: 0)
    }
}

extension AchievementProgress {
    var message: LeaderboardsV1.Achievement {
        LeaderboardsV1.Achievement(
            definition: definition.message, unlocked: unlockedAt != nil,
            unlockedAtUnixMs: (unlockedAt ?? 0) / 1000)
    }
}

extension AchievementDefinition {
    var message: LeaderboardsV1.AchievementDefinition {
        LeaderboardsV1.AchievementDefinition(key: key, name: name, description: description, imageUrl: imageURL)
    }
}
