import RaveMessages
import RaveServices
import RaveTelemetry
import Testing

/// The generated handler protocol, method table and typed client, wired together without a network.
@Suite struct GeneratedServiceTests {
    struct EchoService: EchoV1.EchoHandler {
        func echo(_ request: EchoV1.EchoRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
            EchoV1.EchoResponse(payload: request.payload)
        }

        func echoAfterDelay(
            _ request: EchoV1.EchoAfterDelayRequest, context: RequestContext
        ) async throws -> EchoV1.EchoResponse {
            EchoV1.EchoResponse(payload: request.payload + [UInt8(truncatingIfNeeded: request.delayMs)])
        }

        func fail(_ request: EchoV1.FailRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
            throw RPCError(request.code, request.message)
        }
    }

    /// Routes calls straight into a service's method table, mapping errors as a server would.
    struct InProcessCaller: RPCCaller {
        let methods: [String: RPCMethod]
        var corruptsResponses = false

        init(_ service: some RPCService, corruptsResponses: Bool = false) {
            self.methods = Dictionary(uniqueKeysWithValues: service.methods.map { ($0.name, $0) })
            self.corruptsResponses = corruptsResponses
        }

        func call(method: String, request: [UInt8], options: CallOptions) async throws(RPCError) -> [UInt8] {
            guard let handler = methods[method]?.handler else { throw .unimplemented("no method \(method)") }
            let context = RequestContext(
                requestID: "test", method: method, deadline: .max, metadata: options.metadata,
                peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: nil), caller: nil,
                logger: Logger(label: "test"))
            do {
                let response = try await handler(request, context)
                return corruptsResponses ? [0xFF] : response
            } catch {
                throw RPCError(mapping: error, requestID: context.requestID)
            }
        }
    }

    @Test func methodTableListsEveryRPCByFullName() {
        #expect(EchoService.serviceName == "rave.echo.v1.Echo")
        #expect(EchoService().methods.map(\.name) == EchoV1.EchoClient.methodNames)
        #expect(
            EchoV1.EchoClient.methodNames == [
                "rave.echo.v1.Echo/Echo", "rave.echo.v1.Echo/EchoAfterDelay", "rave.echo.v1.Echo/Fail",
            ])
        #expect(RpcV1.HealthClient.methodNames == ["rave.rpc.v1.Health/Check"])
    }

    @Test func clientCallsReachTheHandlerAndDecodeItsResponse() async throws {
        let client = EchoV1.EchoClient(caller: InProcessCaller(EchoService()))
        #expect(try await client.echo(EchoV1.EchoRequest(payload: [1, 0, 2])).payload == [1, 0, 2])
        let delayed = try await client.echoAfterDelay(EchoV1.EchoAfterDelayRequest(payload: [9], delayMs: 7))
        #expect(delayed.payload == [9, 7])
    }

    @Test func handlerErrorsReachTheClientAsTheirStatus() async {
        let client = EchoV1.EchoClient(caller: InProcessCaller(EchoService()))
        await #expect(throws: RPCError(.notFound, "no such thing")) {
            try await client.fail(EchoV1.FailRequest(code: .notFound, message: "no such thing"))
        }
    }

    @Test func undecodableRequestBecomesInvalidArgument() async throws {
        let method = try #require(EchoService().methods.first)
        let caller = InProcessCaller(EchoService())
        await #expect {
            try await caller.call(method: method.name, request: [0x0A, 0x09], options: CallOptions())
        } throws: { error in
            (error as? RPCError)?.code == .invalidArgument
        }
    }

    @Test func undecodableResponseBecomesInternal() async {
        let client = EchoV1.EchoClient(caller: InProcessCaller(EchoService(), corruptsResponses: true))
        await #expect {
            try await client.echo(EchoV1.EchoRequest())
        } throws: { error in
            guard let error = error as? RPCError else { return false }
            return error.code == .internal && error.message.contains("rave.echo.v1.Echo/Echo")
        }
    }
}
