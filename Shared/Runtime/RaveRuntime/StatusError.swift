import RaveRPC

/// The shape of every data service's error type (docs/ARCHITECTURE.md, "Anatomy of a service").
///
/// A status code and a message in the service's own words, plus what the status may carry besides. `rpcError`,
/// written once here, is where a service's refusals become the statuses its callers receive.
///
/// Identity, social, leaderboards and gifts hold the code itself (`StatusCodeError`); push and wallet hold a `Kind`
/// that decides it, because their own code acts on the kind (a bet that lacked funds is remembered as failed).
public protocol StatusError: Error, Hashable, Sendable, CustomStringConvertible, RPCStatusConvertible {
    /// The status the caller receives.
    var code: StatusCode { get }
    /// What was wrong and what is allowed, in the service's words (a contract: the docs and tests quote it).
    var message: String { get }
    /// An encoded message the method documents, for callers that act on the refusal; empty unless a type says.
    var details: [UInt8] { get }
    /// Nothing was done, so the call may be sent again (elsewhere); false unless a type says.
    var notProcessed: Bool { get }
}

extension StatusError {
    public var details: [UInt8] { [] }
    public var notProcessed: Bool { false }
    public var description: String { message }
    public var rpcError: RPCError? { RPCError(code, message, details: details, notProcessed: notProcessed) }
}

/// A `StatusError` that holds its status code, made by one named constructor per status (`.notFound("…")`).
public protocol StatusCodeError: StatusError {
    init(code: StatusCode, message: String)
}

extension StatusCodeError {
    public static func invalidArgument(_ message: String) -> Self { Self(code: .invalidArgument, message: message) }
    public static func notFound(_ message: String) -> Self { Self(code: .notFound, message: message) }
    public static func alreadyExists(_ message: String) -> Self { Self(code: .alreadyExists, message: message) }
    public static func permissionDenied(_ message: String) -> Self { Self(code: .permissionDenied, message: message) }
    public static func failedPrecondition(_ message: String) -> Self {
        Self(code: .failedPrecondition, message: message)
    }
    public static func resourceExhausted(_ message: String) -> Self { Self(code: .resourceExhausted, message: message) }
    public static func unauthenticated(_ message: String) -> Self { Self(code: .unauthenticated, message: message) }
    public static func aborted(_ message: String) -> Self { Self(code: .aborted, message: message) }
    public static func unavailable(_ message: String) -> Self { Self(code: .unavailable, message: message) }
    public static func internalError(_ message: String) -> Self { Self(code: .internal, message: message) }
}
