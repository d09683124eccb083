import RavePostgres

/// How often a board starts over (rave.leaderboards.v1.ResetInterval; stored as its number).
enum ResetPeriod: Int16, Sendable {
    case none = 0
    case hourly = 1
    case daily = 2
    case weekly = 3
    case monthly = 4
}

/// A board as defined by an operator, with the rules that follow from it.
///
/// Times are microseconds since the Unix epoch, like `PostgresTimestamp`.
struct BoardDefinition: Sendable, Hashable {
    var boardID: Int64
    var appID: String
    var key: String
    var name: String
    var sorter: Int32
    /// True when a lower score is better.
    var ascending: Bool
    var resetPeriod: ResetPeriod
    /// A fixed window (start inclusive, end exclusive) in which the board accepts scores; nil: always open.
    var schedule: Range<Int64>?
    var active: Bool
    /// Version 1 is the reset period containing this instant.
    var versionsStart: Int64

    /// The version that accepts scores at `now` (1 for boards that never reset).
    func currentVersion(at now: Int64) -> Int {
        guard resetPeriod != .none else { return 1 }
        let elapsed = Self.periodIndex(now, resetPeriod) - Self.periodIndex(versionsStart, resetPeriod)
        return max(1, Int(elapsed) + 1)
    }

    /// Why the board refuses scores at `now`, or nil when it accepts them.
    func closedReason(at now: Int64) -> String? {
        if !active { return "leaderboard \"\(key)\" is inactive" }
        if let schedule, !schedule.contains(now) {
            return now < schedule.lowerBound
                ? "leaderboard \"\(key)\" has not started yet" : "leaderboard \"\(key)\" has ended"
        }
        return nil
    }

    /// Whether `score` beats `other` on this board.
    func isBetter(_ score: Int64, than other: Int64) -> Bool {
        ascending ? score < other : score > other
    }

    // MARK: - Reset periods at UTC boundaries

    static let microsecondsPerHour: Int64 = 3_600_000_000
    static let microsecondsPerDay: Int64 = 24 * microsecondsPerHour

    /// The number of whole periods between the Unix epoch and `time` (negative before it).
    static func periodIndex(_ time: Int64, _ period: ResetPeriod) -> Int64 {
        let day = floorDivide(time, microsecondsPerDay)
        switch period {
        case .none: return 0
        case .hourly: return floorDivide(time, microsecondsPerHour)
        case .daily: return day
        // 1970-01-01 was a Thursday: weeks start on the Monday 4 days later.
        case .weekly: return floorDivide(day - 4, 7)
        case .monthly:
            let (year, month, _) = civilDate(daysSinceEpoch: day)
            return year * 12 + month - 1
        }
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    /// Year, month (1–12) and day of a day count, in the proleptic Gregorian calendar.
    ///
    /// Howard Hinnant's days-from-civil algorithm, inverted.
    static func civilDate(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDivide(shifted, 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// Where the current time comes from; tests inject a settable one to cross reset boundaries.
struct WallClock: Sendable {
    /// Microseconds since the Unix epoch.
    var now: @Sendable () -> Int64

    static let system = WallClock { PostgresTimestamp.now().microsecondsSinceEpoch }
}
