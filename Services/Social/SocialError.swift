import RavePostgres
import RaveRPC
import RaveRuntime

/// Everything the social service refuses, with the status each becomes (the module's one error type).
struct SocialError: StatusCodeError {
    var code: StatusCode
    var message: String

    static func unknownUser(_ reference: String) -> Self { .notFound("no user matches \(reference)") }
    static let blocked = permissionDenied("one of the two users blocked the other")
}

/// The limits on request fields, checked in one place so every method words them alike.
enum RequestLimits {
    static let maximumPrefixLength = 64
    static let maximumUsernamesPerCall = 100
    static let maximumContactsPerSync = 5_000
    static let pageSizes = RequestRange("limit", 1...100, zeroMeans: 25)
    static let offsets = RequestRange("offset", 0...100_000)
    static let maxMembers = RequestRange("max_members", 0...1_000_000)
    /// A contact's name as the client's address book has it: may be empty, at most 256 bytes, no control
    /// characters (the display-name rule's bytes, without its 64-character cap: address books hold longer names).
    static let contactName = TextRule(characters: 0...256, maximumBytes: 256)

    /// Every numeric range with the message whose field it checks; the tests compare them with the proto comments.
    static let declaredRanges: [(message: String, range: RequestRange)] = [
        ("rave.social.v1.ListQuery", pageSizes), ("rave.social.v1.ListQuery", offsets),
        ("rave.social.v1.ListFriendRequestsRequest", pageSizes),
        ("rave.social.v1.ListFriendRequestsRequest", offsets),
        ("rave.social.v1.ListBlockedUsersRequest", pageSizes), ("rave.social.v1.ListBlockedUsersRequest", offsets),
        ("rave.social.v1.QueryContactsRequest", pageSizes), ("rave.social.v1.QueryContactsRequest", offsets),
        ("rave.social.v1.CreateListRequest", maxMembers),
    ]

    /// `limit` 0 means the default; anything else must be 1…100.
    static func pageSize(_ limit: UInt32) throws(SocialError) -> Int {
        try pageSizes.check(limit, orThrow: SocialError.invalidArgument)
    }

    /// 0…100000; deeper pages use the cursor.
    static func offset(_ offset: UInt32) throws(SocialError) -> Int {
        try offsets.check(offset) { SocialError.invalidArgument($0 + "; use the cursor for deep pages") }
    }

    /// A Rave ID on the wire: 32 lowercase hex digits, as every service reads them; another spelling is refused.
    static func userID(_ text: String, field: String) throws(SocialError) -> RaveID {
        guard let id = RaveID(wire: text) else {
            throw .invalidArgument(RequestChecks.raveIDProblem(field: field, text: text))
        }
        return id
    }
}
