/// How a PostgreSQL failure should be reported to a caller, independent of any RPC layer.
///
/// The runtime maps each kind to the status code of the same name.
public enum PostgresErrorKind: String, Sendable, Hashable {
    case alreadyExists = "ALREADY_EXISTS"
    case failedPrecondition = "FAILED_PRECONDITION"
    case aborted = "ABORTED"
    case unavailable = "UNAVAILABLE"
    case cancelled = "CANCELLED"
    case deadlineExceeded = "DEADLINE_EXCEEDED"
    case resourceExhausted = "RESOURCE_EXHAUSTED"
    case invalidArgument = "INVALID_ARGUMENT"
    case `internal` = "INTERNAL"
}

/// A failure talking to PostgreSQL: a server error (with its SQLSTATE), a lost connection, a timeout, a pool
/// limit, or a value that could not be decoded.
///
/// An open struct rather than an enum so new cases do not break callers; compare with the static cases through
/// `code`, or look at `kind` to decide what to tell a client.
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, in categories a caller can act on.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String

        public var description: String { name }

        /// The server reported an error; `sqlState` says which.
        public static let server = Code(name: "server")
        /// The connection could not be established or was lost.
        public static let connectionFailed = Code(name: "connectionFailed")
        /// Connecting took longer than the configured timeout.
        public static let connectTimeout = Code(name: "connectTimeout")
        /// The statement ran past its deadline and was cancelled on the server.
        public static let queryTimeout = Code(name: "queryTimeout")
        /// The awaiting task was cancelled; the statement was cancelled on the server.
        public static let cancelled = Code(name: "cancelled")
        /// No pooled connection became free before the acquire timeout.
        public static let poolExhausted = Code(name: "poolExhausted")
        /// The pool, connection or listener was shut down.
        public static let shutdown = Code(name: "shutdown")
        /// A column was NULL, missing, or of a type the requested Swift type cannot hold.
        public static let decoding = Code(name: "decoding")
        /// A migration could not be applied or no longer matches what was applied.
        public static let migration = Code(name: "migration")
        /// The server's data was not in the format expected (a malformed or truncated binary COPY stream).
        public static let malformedData = Code(name: "malformedData")
        /// libpq refused a request (for example a malformed connection string).
        public static let client = Code(name: "client")
    }

    public var code: Code
    public var message: String
    /// The five-character SQLSTATE for server errors ("23505"), or nil.
    public var sqlState: String?
    public var detail: String?
    public var constraint: String?

    public init(
        _ code: Code, _ message: String, sqlState: String? = nil, detail: String? = nil, constraint: String? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.constraint = constraint
    }

    public static let poolExhausted = PostgresError(.poolExhausted, "no database connection became free in time")
    public static let shutdown = PostgresError(.shutdown, "the database client was shut down")
    public static let connectionClosed = PostgresError(.connectionFailed, "the database connection was closed")

    /// NULL read into a non-optional Swift type.
    public static func unexpectedNull(column: String) -> PostgresError {
        PostgresError(.decoding, "column \"\(column)\" is NULL; decode it as an Optional")
    }

    public var description: String {
        var text = "PostgresError.\(code)"
        if let sqlState { text += " [\(sqlState)]" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        if let constraint { text += " constraint=\(constraint)" }
        return text
    }

    /// The category a client should see, derived from the SQLSTATE for server errors.
    public var kind: PostgresErrorKind {
        switch code {
        case .server: return Self.kind(sqlState: sqlState ?? "")
        case .connectionFailed, .connectTimeout, .shutdown: return .unavailable
        case .queryTimeout: return .deadlineExceeded
        case .cancelled: return .cancelled
        case .poolExhausted: return .resourceExhausted
        default: return .internal
        }
    }

    /// The status code name for `kind` ("ALREADY_EXISTS"), for layers that do not know this module's types.
    public var statusCodeName: String { kind.rawValue }

    /// The message a client may see, in our own words for its kind and SQLSTATE.
    ///
    /// Never the server's text, a constraint name, or libpq's connection detail: those describe our schema and
    /// network, and stay in the logs (`description`). Stores that know what a constraint means (a taken username)
    /// catch the error and say so themselves; this is what every other failure says.
    public var statusMessage: String {
        switch kind {
        case .alreadyExists: return "a record with that unique value already exists"
        case .failedPrecondition: return "the change conflicts with records it refers to or that refer to it"
        case .invalidArgument: return Self.invalidValueMessages[sqlState ?? ""] ?? "a value is not valid"
        case .aborted: return "the change conflicted with a concurrent one; retry it"
        case .unavailable: return "the database is unavailable; retry later"
        case .cancelled: return "the database work was cancelled"
        case .deadlineExceeded: return "the database work ran past its deadline"
        case .resourceExhausted: return "no database connection became free in time; retry later"
        case .internal: return "internal database error"
        }
    }

    private static let invalidValueMessages = [
        "23514": "a value is outside what is allowed",
        "23502": "a required value is missing",
        "22001": "a text value is too long",
        "22003": "a number is out of range",
        "22P02": "a value is not written in a valid form",
        "22007": "a date or time is not written in a valid form",
        "22008": "a date or time is out of range",
        "22021": "a text value holds bytes that are not valid UTF-8 text",
        "22P05": "a text value holds a character that cannot be stored",
    ]

    /// Whether retrying the whole transaction may succeed (serialization failure or deadlock).
    public var isRetryableTransactionFailure: Bool {
        code == .server && (sqlState == "40001" || sqlState == "40P01")
    }

    static func kind(sqlState: String) -> PostgresErrorKind {
        switch sqlState {
        case "23505", "23P01": return .alreadyExists
        case "23503": return .failedPrecondition
        case "40001", "40P01": return .aborted
        case "57014": return .cancelled
        case "57P01", "57P02", "57P03": return .unavailable
        case "23514", "23502", "22P02", "22003", "22001", "22007", "22008", "22021", "22P05": return .invalidArgument
        default: return sqlState.hasPrefix("08") ? .unavailable : .internal
        }
    }
}
