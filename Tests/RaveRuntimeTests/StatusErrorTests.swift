import RaveRPC
import Testing

@testable import RaveRuntime

/// The one shape of the services' error types: named constructors per status, and `rpcError` carrying the code,
/// the message word for word, and what a type adds (details, "not processed").
@Suite struct StatusErrorTests {
    /// An error type that holds its code, as identity's, social's, leaderboards' and gifts' do.
    struct CodeHeld: StatusCodeError {
        var code: StatusCode
        var message: String
    }

    /// An error type whose kind decides the status, as push's and wallet's do.
    struct KindDecided: StatusError {
        enum Kind { case lacksFunds, peerDown }
        var kind: Kind
        var message: String
        var code: StatusCode { kind == .lacksFunds ? .failedPrecondition : .unavailable }
        var notProcessed: Bool { kind == .peerDown }
        var details: [UInt8] { kind == .peerDown ? [1, 2] : [] }
    }

    @Test func eachNamedConstructorAnswersItsStatusWithTheMessageUnchanged() {
        let cases: [(CodeHeld, StatusCode)] = [
            (.invalidArgument("m"), .invalidArgument), (.notFound("m"), .notFound),
            (.alreadyExists("m"), .alreadyExists), (.permissionDenied("m"), .permissionDenied),
            (.failedPrecondition("m"), .failedPrecondition), (.resourceExhausted("m"), .resourceExhausted),
            (.unauthenticated("m"), .unauthenticated), (.aborted("m"), .aborted), (.unavailable("m"), .unavailable),
            (.internalError("m"), .internal),
        ]
        for (error, code) in cases {
            #expect(error.rpcError == RPCError(code, "m"))
            #expect(error.description == "m")
        }
    }

    @Test func aKindDecidesTheStatusAndWhatItCarries() {
        #expect(
            KindDecided(kind: .lacksFunds, message: "insufficient funds").rpcError
                == RPCError(.failedPrecondition, "insufficient funds"))
        #expect(
            KindDecided(kind: .peerDown, message: "identity is down").rpcError
                == RPCError(.unavailable, "identity is down", details: [1, 2], notProcessed: true))
    }

    /// The runtime's mapping of a thrown error reaches `rpcError`, so a service error keeps its status and words.
    @Test func aThrownServiceErrorReachesTheCallerAsItsStatus() {
        let mapped = RPCError(mapping: CodeHeld.notFound("no gift type \"x\""), requestID: "r1")
        #expect(mapped == RPCError(.notFound, "no gift type \"x\""))
    }
}
