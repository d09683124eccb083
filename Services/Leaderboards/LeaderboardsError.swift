import RaveRPC

/// Everything the leaderboards service refuses, with the status each becomes (the module's one error type).
struct LeaderboardsError: Error, Hashable, RPCStatusConvertible, CustomStringConvertible {
    var code: StatusCode
    var message: String
    /// An encoded message the method documents (`NotBoardOwner`), for callers that act on the refusal.
    var details: [UInt8] = []
    /// Nothing was done, so the call may be sent again (elsewhere).
    var notProcessed = false

    var rpcError: RPCError? { RPCError(code, message, details: details, notProcessed: notProcessed) }
    var description: String { message }

    static func invalidArgument(_ message: String) -> Self { Self(code: .invalidArgument, message: message) }
    static func failedPrecondition(_ message: String) -> Self { Self(code: .failedPrecondition, message: message) }
    static func notFound(_ message: String) -> Self { Self(code: .notFound, message: message) }
    static func unavailable(_ message: String) -> Self { Self(code: .unavailable, message: message) }

    static func unknownLeaderboard(_ key: String) -> Self { .notFound("no leaderboard with key \"\(key)\"") }
    static func unknownAchievement(_ key: String) -> Self { .notFound("no achievement with key \"\(key)\"") }
}

/// The limits of the "bad input" list, checked in one place so every method words them alike.
enum RequestLimits {
    static let pageSizes = 1...200
    static let adjacentCounts = 1...100
    static let keyLength = 1...128

    static func page(_ page: Int32) throws(LeaderboardsError) -> Int {
        guard page >= 1 else { throw .invalidArgument("page must be 1 or more, got \(page)") }
        return Int(page)
    }

    static func pageSize(_ size: Int32) throws(LeaderboardsError) -> Int {
        guard pageSizes.contains(Int(size)) else {
            throw .invalidArgument("page_size must be \(pageSizes.lowerBound)…\(pageSizes.upperBound), got \(size)")
        }
        return Int(size)
    }

    static func adjacent(_ count: Int32) throws(LeaderboardsError) -> Int {
        guard adjacentCounts.contains(Int(count)) else {
            throw .invalidArgument(
                "adjacent must be \(adjacentCounts.lowerBound)…\(adjacentCounts.upperBound), got \(count)")
        }
        return Int(count)
    }

    static func key(_ key: String, field: String) throws(LeaderboardsError) -> String {
        guard keyLength.contains(key.utf8.count) else {
            throw .invalidArgument("\(field) must be \(keyLength.lowerBound)…\(keyLength.upperBound) bytes")
        }
        return key
    }
}
