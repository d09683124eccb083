import RaveProtobuf
import Testing

@testable import RaveRPC

@Suite("Error mapping")
struct RPCErrorMappingTests {
    private struct Unexpected: Error {}

    private struct Convertible: RPCStatusConvertible {
        var rpcError: RPCError? { .notFound("no such row") }
    }

    @Test func keepsAnRPCErrorAsThrown() {
        let error = RPCError(.alreadyExists, "taken", notProcessed: true)
        #expect(RPCError(mapping: error, requestID: "r1") == error)
    }

    @Test func mapsUndecodableRequestsToInvalidArgument() {
        let mapped = RPCError(
            mapping: ProtoDecodingError(messageName: "rave.echo.v1.EchoRequest", reason: "truncated"),
            requestID: "r1")
        #expect(mapped.code == .invalidArgument)
    }

    @Test func mapsCancellationAndConvertibleErrors() {
        #expect(RPCError(mapping: CancellationError(), requestID: "r1").code == .cancelled)
        #expect(RPCError(mapping: Convertible(), requestID: "r1").code == .notFound)
    }

    @Test func hidesUnexpectedErrorsBehindTheRequestID() {
        let mapped = RPCError(mapping: Unexpected(), requestID: "req-42")
        #expect(mapped.code == .internal)
        #expect(mapped.message.contains("req-42"))
    }
}
