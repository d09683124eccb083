import RavePostgres
import RaveRPC

/// Database failures answer with the status their kind names, so handlers can let `PostgresError` propagate.
///
/// The message is `statusMessage`, our own words: the server's text, constraint names and connection detail
/// never reach a client (they are in the log line of the failed call).
///
/// Lives here because RavePostgres must not depend on RaveRPC; `RPCError(mapping:requestID:)` picks it up.
extension PostgresError: RPCStatusConvertible {
    public var rpcError: RPCError? {
        switch kind {
        case .alreadyExists: .alreadyExists(statusMessage)
        case .failedPrecondition: .failedPrecondition(statusMessage)
        case .aborted: RPCError(.aborted, statusMessage)
        // A pool or connection failure happened before the handler's write reached the database only when the
        // pool says so; callers may not assume it was not processed.
        case .unavailable: .unavailable(statusMessage)
        case .cancelled: RPCError(.cancelled, statusMessage)
        case .deadlineExceeded: RPCError(.deadlineExceeded, statusMessage)
        case .resourceExhausted: .resourceExhausted(statusMessage)
        case .invalidArgument: .invalidArgument(statusMessage)
        case .internal: nil
        }
    }
}
