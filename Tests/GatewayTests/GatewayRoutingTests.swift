import Foundation
import RaveMessages
import RaveRPC
import RaveRuntime
import RaveTransport
import Testing

@testable import Gateway

/// Routing, deadlines, cancellation and failures, end to end over TLS.
@Suite("Gateway routing")
struct GatewayRoutingTests {
    @Test func unknownMethodsAndServicesAreUnimplemented() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"))
        for method in [
            "nonsense", "rave.nosuch.v1.Thing/Do", "rave.echo.v1.Echo/NoSuchMethod", "a.b.c/d",
            "rave.echo.v2.Echo/Echo",
        ] {
            let error = await failure(connection, method, [], options: options)
            #expect(error?.code == .unimplemented, "\(method)")
        }
        connection.close()
        try await harness.stop()
    }

    @Test func serviceStatusesPassThrough() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let request = EchoV1.FailRequest(code: .failedPrecondition, message: "board is closed").protobufBytes()
        let error = await failure(
            connection, "rave.echo.v1.Echo/Fail", request, options: bearer(try harness.token(for: "user-1")))
        #expect(error == RPCError(.failedPrecondition, "board is closed"))
        connection.close()
        try await harness.stop()
    }

    @Test func aServiceThatIsDownIsUnavailableAndNotProcessed() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let error = await failure(
            connection, "rave.wallet.v1.Wallet/GetWallet", [], options: bearer(try harness.token(for: "user-1")))
        #expect(error?.code == .unavailable)
        #expect(error?.notProcessed == true)
        #expect(error?.message.contains("wallet") == true)
        connection.close()
        try await harness.stop()
    }

    @Test func notProcessedFailuresAreRetriedOnAnotherBackend() async throws {
        let harness = try await GatewayHarness.start()
        // A pool of our own, without a health checker, so the dead addresses are found by calls.
        let tls = try TLSContext(
            .client(
                trustRootsPath: "\(harness.directory)/ca.pem", certificateChainPath: "\(harness.directory)/gateway.pem",
                privateKeyPath: "\(harness.directory)/gateway-key.pem"))
        let live = try #require(harness.runtime.pipeline.pools["echo"]?.backends.first?.address)
        let backends = [SocketAddress(host: "127.0.0.1", port: 1), live, SocketAddress(host: "127.0.0.1", port: 1)]
            .map { address in
                Backend(
                    address: address,
                    client: RPCClient(host: address.host, port: address.port, tls: tls, group: harness.clientGroup))
            }
        let caller = ServiceCaller(pool: BackendPool(service: "echo", backends: backends))
        let request = EchoV1.EchoRequest(payload: [42]).protobufBytes()
        for _ in 0..<6 {
            let response = try await caller.call(
                method: "rave.echo.v1.Echo/Echo", request: request, options: CallOptions(timeout: .seconds(5)))
            #expect(try EchoV1.EchoResponse(protobufBytes: response).payload == [42])
        }
        // Refused connections marked the dead addresses unhealthy; only the live one is left in rotation.
        #expect(backends.map(\.isHealthy) == [false, true, false])
        for backend in backends { backend.client.close() }
        try await harness.stop()
    }

    @Test func deadlinesPropagateMinusTheMargin() async throws {
        let harness = try await GatewayHarness.start(["RAVE_GATEWAY_DEADLINE_MARGIN": "100ms"])
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"), timeout: .seconds(2))
        _ = try await connection.call(
            method: "rave.echo.v1.Echo/Echo", request: EchoV1.EchoRequest(payload: [1]).protobufBytes(),
            options: options)
        let seen = try #require(harness.echo.remainingMilliseconds.withLock { $0.last })
        #expect(seen <= 1900 && seen > 1500, "the service saw \(seen) ms")

        let slow = EchoV1.EchoAfterDelayRequest(payload: [1], delayMs: 2000).protobufBytes()
        let error = await failure(
            connection, "rave.echo.v1.Echo/EchoAfterDelay", slow,
            options: bearer(try harness.token(for: "user-1"), timeout: .milliseconds(300)))
        #expect(error?.code == .deadlineExceeded)
        connection.close()
        try await harness.stop()
    }

    @Test func clientCancellationCancelsTheBackendCall() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"), timeout: .seconds(10))
        try await cancelALongCall(harness, connection, options: options)
        #expect(harness.echo.cancelledCalls.load(ordering: .relaxed) == 1)
        connection.close()
        try await harness.stop()
    }

    @Test func healthIsServedByTheGatewayItself() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let response = try await connection.call(
            method: "rave.rpc.v1.Health/Check", request: RpcV1.HealthCheckRequest().protobufBytes(),
            options: CallOptions())
        #expect(try RpcV1.HealthCheckResponse(protobufBytes: response).status == .serving)
        connection.close()
        try await harness.stop()
    }
}
