import RaveRPC
import RaveRuntime

/// Everything the identity service refuses, with the status each becomes (the module's one error type).
///
/// A refusal may carry what `RPCError` carries beyond its status: an encoded detail message and "not processed"
/// (the password hashing refusal's RetryInfo).
struct IdentityError: StatusCodeError {
    var code: StatusCode
    var message: String
    var details: [UInt8] = []
    var notProcessed = false

    /// As `RPCError` words it, so failures recorded or logged as text read as before.
    var description: String { RPCError(code, message).description }

    /// A refusal of the checks shared by every service (`RequestChecks`, `TextRule`), kept word for word.
    init(_ error: RPCError) {
        self.init(code: error.code, message: error.message, details: error.details, notProcessed: error.notProcessed)
    }

    init(code: StatusCode, message: String) {
        self.code = code
        self.message = message
    }

    init(code: StatusCode, message: String, details: [UInt8], notProcessed: Bool = false) {
        self.code = code
        self.message = message
        self.details = details
        self.notProcessed = notProcessed
    }

    /// Runs one of the shared checks, its refusal as an `IdentityError`.
    static func checking<Value>(_ check: () throws(RPCError) -> Value) throws(IdentityError) -> Value {
        do {
            return try check()
        } catch {
            throw IdentityError(error)
        }
    }
}

/// The ranges of identity's numeric request fields, as the proto comments state them; the tests compare the two.
enum RequestLimits {
    static let randomUsers = RequestRange("limit", 1...50)
    static let auditPageSize = RequestRange("page_size", 1...100, zeroMeans: 50)
    static let deletionPageSize = RequestRange("page_size", 1...100, zeroMeans: 50)
    static let mergePageSize = RequestRange("page_size", 1...100, zeroMeans: 50)
    static let publisherPageSize = RequestRange("page_size", 1...100, zeroMeans: 50)
    static let applicationPageSize = RequestRange("page_size", 1...100, zeroMeans: 50)

    /// Every range above with the message whose field it checks.
    static let declaredRanges: [(message: String, range: RequestRange)] = [
        ("rave.identity.v1.GetRandomUsersRequest", randomUsers),
        ("rave.identity.v1.ListAuditEventsRequest", auditPageSize),
        ("rave.identity.v1.ListAccountDeletionsRequest", deletionPageSize),
        ("rave.identity.v1.ListMergesRequest", mergePageSize),
        ("rave.identity.v1.ListPublishersRequest", publisherPageSize),
        ("rave.identity.v1.ListApplicationsRequest", applicationPageSize),
    ]
}
