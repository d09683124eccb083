import RavePostgres
import RaveRPC
import RaveRuntime

/// Everything the leaderboards service refuses, with the status each becomes (the module's one error type).
struct LeaderboardsError: StatusCodeError {
    var code: StatusCode
    var message: String
    /// An encoded message the method documents (`NotBoardOwner`), for callers that act on the refusal.
    var details: [UInt8] = []
    /// Nothing was done, so the call may be sent again (elsewhere).
    var notProcessed = false

    static func unknownLeaderboard(_ key: String) -> Self { .notFound("no leaderboard with key \"\(key)\"") }
    static func unknownAchievement(_ key: String) -> Self { .notFound("no achievement with key \"\(key)\"") }
}

extension LeaderboardsError {
    /// A refusal with nothing beyond its status (an extension, so the memberwise initializer stays).
    init(code: StatusCode, message: String) {
        self.init(code: code, message: message, details: [])
    }
}

/// The limits on request fields, checked in one place so every method words them alike.
enum RequestLimits {
    static let keyLength = 1...128
    static let pages = RequestRange("page", 1...Int64(Int32.max))
    static let pageSizes = RequestRange("page_size", 1...200)
    static let adjacentCounts = RequestRange("adjacent", 1...100)
    static let topCounts = RequestRange("count", 1...100)

    /// Every numeric range with the message whose field it checks; the tests compare them with the proto comments.
    static let declaredRanges: [(message: String, range: RequestRange)] = [
        ("rave.leaderboards.v1.GetGlobalScoresRequest", pages),
        ("rave.leaderboards.v1.GetGlobalScoresRequest", pageSizes),
        ("rave.leaderboards.v1.GetFriendsScoresRequest", pages),
        ("rave.leaderboards.v1.GetFriendsScoresRequest", pageSizes),
        ("rave.leaderboards.v1.GetMyScoresRequest", pageSizes),
        ("rave.leaderboards.v1.GetScoresAdjacentRequest", adjacentCounts),
        ("rave.leaderboards.v1.GetTopScoresRequest", topCounts),
    ]

    static func page(_ page: Int32) throws(LeaderboardsError) -> Int {
        try pages.check(page, orThrow: LeaderboardsError.invalidArgument)
    }

    static func pageSize(_ size: Int32) throws(LeaderboardsError) -> Int {
        try pageSizes.check(size, orThrow: LeaderboardsError.invalidArgument)
    }

    static func adjacent(_ count: Int32) throws(LeaderboardsError) -> Int {
        try adjacentCounts.check(count, orThrow: LeaderboardsError.invalidArgument)
    }

    /// An id on the wire (an app id, a user id): 32 lowercase hex digits, as every service reads them.
    static func id(_ text: String, field: String) throws(LeaderboardsError) -> RaveID {
        guard let id = RaveID(wire: text) else {
            throw .invalidArgument(RequestChecks.raveIDProblem(field: field, text: text))
        }
        return id
    }

    static func key(_ key: String, field: String) throws(LeaderboardsError) -> String {
        guard keyLength.contains(key.utf8.count) else {
            throw .invalidArgument("\(field) must be \(keyLength.lowerBound)…\(keyLength.upperBound) bytes")
        }
        return key
    }
}
