import RavePostgres
import RaveRPC

/// Everything the social service refuses, with the status each becomes (the module's one error type).
struct SocialError: Error, Hashable, RPCStatusConvertible, CustomStringConvertible {
    var code: StatusCode
    var message: String

    var rpcError: RPCError? { RPCError(code, message) }
    var description: String { message }

    static func invalidArgument(_ message: String) -> Self { Self(code: .invalidArgument, message: message) }
    static func notFound(_ message: String) -> Self { Self(code: .notFound, message: message) }
    static func alreadyExists(_ message: String) -> Self { Self(code: .alreadyExists, message: message) }
    static func permissionDenied(_ message: String) -> Self { Self(code: .permissionDenied, message: message) }
    static func failedPrecondition(_ message: String) -> Self { Self(code: .failedPrecondition, message: message) }
    static func resourceExhausted(_ message: String) -> Self { Self(code: .resourceExhausted, message: message) }
    static func unavailable(_ message: String) -> Self { Self(code: .unavailable, message: message) }

    static func unknownUser(_ reference: String) -> Self { .notFound("no user matches \(reference)") }
    static let blocked = permissionDenied("one of the two users blocked the other")
}

/// The limits of the "bad input" list, checked in one place so every method words them alike.
enum RequestLimits {
    static let pageSizes = 1...100
    static let defaultPageSize = 25
    static let maximumOffset = 100_000
    static let maximumPrefixLength = 64
    static let maximumUsernamesPerCall = 100
    static let maximumContactsPerSync = 5_000

    /// `limit` 0 means the default; anything else must be 1…100.
    static func pageSize(_ limit: UInt32) throws(SocialError) -> Int {
        if limit == 0 { return defaultPageSize }
        guard pageSizes.contains(Int(limit)) else {
            throw .invalidArgument("limit must be \(pageSizes.lowerBound)…\(pageSizes.upperBound), got \(limit)")
        }
        return Int(limit)
    }

    static func offset(_ offset: UInt32) throws(SocialError) -> Int {
        guard offset <= maximumOffset else {
            throw .invalidArgument("offset must be 0…\(maximumOffset), got \(offset); use the cursor for deep pages")
        }
        return Int(offset)
    }

    /// A Rave ID on the wire: 32 lowercase hex digits.
    static func userID(_ text: String, field: String) throws(SocialError) -> RaveID {
        guard text.utf8.count == 32, let id = RaveID(text) else {
            throw .invalidArgument("\(field) must be a Rave ID (32 hex digits), got \"\(text.prefix(40))\"")
        }
        return id
    }
}
