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
