import RaveServices

/// The protocol's conformance service: echoes payloads, waits on request, fails on request.
struct EchoService: EchoV1.EchoHandler {
    func echo(_ request: EchoV1.EchoRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        EchoV1.EchoResponse(payload: request.payload)
    }

    func echoAfterDelay(
        _ request: EchoV1.EchoAfterDelayRequest, context: RequestContext
    ) async throws -> EchoV1.EchoResponse {
        let delay = UInt64(request.delayMs) * 1_000_000
        let remaining = context.remainingNanoseconds
        // Sleeping past the deadline is pointless: the server has already answered DEADLINE_EXCEEDED.
        try await Task.sleep(for: .nanoseconds(Int64(min(delay, remaining))))
        guard delay <= remaining else { throw RPCError(.deadlineExceeded, "the delay outlasts the deadline") }
        return EchoV1.EchoResponse(payload: request.payload)
    }

    func fail(_ request: EchoV1.FailRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        throw RPCError(request.code, request.message)
    }
}

/// `EchoService` with Echo/Echo answered in place (a synchronous handler: nothing to wait for), as a service
/// answering from memory would; `serve-echo --echo async` serves the generated async handler instead.
struct SynchronousEchoService: RPCService {
    static var serviceName: String { EchoService.serviceName }

    static let echoMethod = "rave.echo.v1.Echo/Echo"

    var methods: [RPCMethod] {
        EchoService().methods.map { method in
            guard method.name == Self.echoMethod else { return method }
            return .synchronous(name: Self.echoMethod) { request, _ in
                EchoV1.EchoResponse(payload: try EchoV1.EchoRequest(protobufBytes: request).payload).protobufBytes()
            }
        }
    }
}
