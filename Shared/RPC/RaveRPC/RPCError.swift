import RaveMessages
import RaveProtobuf

/// The protocol's status codes (gRPC numbering), generated from Proto/rave/rpc/v1/status.proto.
public typealias StatusCode = RpcV1.StatusCode

/// A failed call: the status a server answers with, or a client receives.
///
/// Handlers throw it to choose the status; any other error is mapped by `RPCError(mapping:requestID:)`,
/// the one place where errors become statuses.
public struct RPCError: Error, Hashable, Sendable, CustomStringConvertible {
    public var code: StatusCode
    public var message: String
    /// Optional machine-readable detail (an encoded message the method documents).
    public var details: [UInt8]
    /// The server did not start processing the request: it is safe to retry, on any connection.
    public var notProcessed: Bool

    public init(_ code: StatusCode, _ message: String, details: [UInt8] = [], notProcessed: Bool = false) {
        self.code = code
        self.message = message
        self.details = details
        self.notProcessed = notProcessed
    }

    public var description: String { "\(code) (\(code.rawValue)): \(message)" }

    public static func invalidArgument(_ message: String) -> RPCError { RPCError(.invalidArgument, message) }
    public static func notFound(_ message: String) -> RPCError { RPCError(.notFound, message) }
    public static func alreadyExists(_ message: String) -> RPCError { RPCError(.alreadyExists, message) }
    public static func permissionDenied(_ message: String) -> RPCError { RPCError(.permissionDenied, message) }
    public static func failedPrecondition(_ message: String) -> RPCError { RPCError(.failedPrecondition, message) }
    public static func resourceExhausted(_ message: String) -> RPCError { RPCError(.resourceExhausted, message) }
    public static func unauthenticated(_ message: String) -> RPCError { RPCError(.unauthenticated, message) }
    public static func unimplemented(_ message: String) -> RPCError { RPCError(.unimplemented, message) }
    public static func unavailable(_ message: String, notProcessed: Bool = false) -> RPCError {
        RPCError(.unavailable, message, notProcessed: notProcessed)
    }
    public static func internalError(_ message: String) -> RPCError { RPCError(.internal, message) }
}

/// An error from another module that knows which status it stands for (a database error, say).
public protocol RPCStatusConvertible: Error {
    /// The status to answer with. Return nil to let the error be reported as INTERNAL.
    var rpcError: RPCError? { get }
}

extension RPCError {
    /// Maps any error a handler threw to the status the caller sees.
    ///
    /// Unexpected errors become INTERNAL with the request id in the message, so an operator can find the
    /// detail in the log; the detail itself never reaches the caller.
    public init(mapping error: any Error, requestID: String) {
        switch error {
        case let error as RPCError:
            self = error
        case let error as ProtoDecodingError:
            self = .invalidArgument("request is \(error.description)")
        case is CancellationError:
            self = RPCError(.cancelled, "the call was cancelled")
        case let error as any RPCStatusConvertible:
            self = error.rpcError ?? .internalError("internal error (request id \(requestID))")
        default:
            self = .internalError("internal error (request id \(requestID))")
        }
    }
}
