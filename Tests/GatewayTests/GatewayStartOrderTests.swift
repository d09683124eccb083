import RaveMessages
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Testing

@testable import Gateway

/// A gateway started before a service: calls fail fast (not processed) until the service serves, then succeed
/// without waiting out the reconnect backoff; `/readyz` waits for a healthy backend per service.
@Suite("Gateway start order")
struct GatewayStartOrderTests {
    @Test func aServiceStartingAfterTheGatewayIsUsedAsSoonAsItServes() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        // The service will listen there later: a port below the ephemeral range, so no outgoing connection of a
        // test running meanwhile takes it as its local port first.
        let port = try LoopbackPort.unused()

        // A backoff that would hold the backend's client for up to an hour: only the health check's probe of a
        // down backend (which ends the backoff) can bring the service into use while the test runs.
        let harness = try await GatewayHarness.start([
            "RAVE_GATEWAY_ECHO_ADDRESSES": "127.0.0.1:\(port)", "RAVE_GATEWAY_RECONNECT_BACKOFF": "3600s",
        ])
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"))
        let echo = EchoV1.EchoRequest(payload: [1]).protobufBytes()
        let early = await failure(connection, "rave.echo.v1.Echo/Echo", echo, options: options)
        #expect(early?.code == .unavailable && early?.notProcessed == true)
        // Long enough for the backend clients to be deep in their reconnect backoff.
        try await Task.sleep(for: .seconds(1))
        #expect(try await backendsReadiness(harness)?.contains("echo") == true)

        let tls = try TLSContext(
            .server(
                certificateChainPath: "\(harness.directory)/echo.pem",
                privateKeyPath: "\(harness.directory)/echo-key.pem", trustRootsPath: "\(harness.directory)/ca.pem",
                requireClientCertificate: true))
        let service = RPCServer(
            configuration: RPCServerConfiguration(host: "127.0.0.1", port: port), services: [TestEcho()],
            access: TrustModel.backend, tls: tls,
            group: group, logger: Logger(label: "late-echo", level: .warning))
        try service.start()
        // A bound for a stuck test, not a latency claim.
        try await eventually(timeout: .seconds(60)) {
            await failure(connection, "rave.echo.v1.Echo/Echo", echo, options: options) == nil
        }
        #expect(try await backendsReadiness(harness)?.contains("echo") == false)

        connection.close()
        try await harness.stop()
        await service.shutdown()
    }

    /// The failure `/readyz` reports for the backends (the harness's other services never run).
    private func backendsReadiness(_ harness: GatewayHarness) async throws -> String? {
        let report = await harness.runtime.readiness.evaluate()
        return try #require(report.results.first { $0.name == "backends" }).failure
    }
}
