import RaveMessages
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@testable import Gateway

/// Backends named by DNS: each address the name resolves to becomes a backend of its own, found by that address
/// (how a leaderboards replica is found as a board's owner), and the pool follows the name's answers.
@Suite("Gateway backend discovery")
struct BackendDiscoveryTests {
    @Test func aNameBecomesOneBackendPerAddressAndFollowsItsAnswers() async throws {
        let harness = try await GatewayHarness.start()
        let echo = try #require(harness.runtime.pipeline.pools["echo"]?.backends.first?.address)
        let tls = try TLSContext(
            .client(
                trustRootsPath: "\(harness.directory)/ca.pem", certificateChainPath: "\(harness.directory)/gateway.pem",
                privateKeyPath: "\(harness.directory)/gateway-key.pem"))
        // Stands in for DNS: "localhost" is a name the development certificates carry, so TLS can check it.
        let answers = Mutex<[String]?>(nil)
        let directory = BackendDirectory(
            backends: ["echo": [SocketAddress(host: "localhost", port: echo.port)]], tls: tls,
            group: harness.clientGroup, connectionsPerBackend: 1, healthCheckInterval: .seconds(60),
            logger: Logger(label: "test", level: .error),
            resolve: { _ in
                guard let addresses = answers.withLock({ $0 }) else { throw NoAnswer() }
                return addresses
            })
        let pool = try #require(directory.pools["echo"])
        let v4 = SocketAddress(host: "127.0.0.1", port: echo.port)
        let v6 = SocketAddress(host: "::1", port: echo.port)
        #expect(pool.backends.map(\.address) == [SocketAddress(host: "localhost", port: echo.port)])

        answers.withLock { $0 = ["127.0.0.1"] }
        await directory.resolveNames()
        #expect(pool.backends.map(\.address) == [v4])
        let first = try #require(pool.backends.first)
        #expect(pool.choose(preferring: v4)?.backend === first, "an owner's advertised address finds its backend")
        // Connected by address, verified against the configured name.
        try await expectEcho(through: pool)

        answers.withLock { $0 = ["127.0.0.1", "::1", "127.0.0.1"] }
        await directory.resolveNames()
        #expect(pool.backends.map(\.address) == [v4, v6])
        #expect(pool.backends.first === first, "a backend that stays keeps its connections")

        answers.withLock { $0 = nil }
        await directory.resolveNames()
        #expect(pool.backends.map(\.address) == [v4, v6], "a failed resolution keeps what is known")

        answers.withLock { $0 = ["::1"] }
        await directory.resolveNames()
        #expect(pool.backends.map(\.address) == [v6])
        // The backend that left is not closed at once: calls under way on it finish.
        let response = try await first.client.call(
            method: "rave.echo.v1.Echo/Echo", request: EchoV1.EchoRequest(payload: [1]).protobufBytes(),
            options: CallOptions(timeout: .seconds(5)))
        #expect(try EchoV1.EchoResponse(protobufBytes: response).payload == [1])

        first.close()
        for backend in pool.backends { backend.close() }
        try await harness.stop()
    }

    @Test func numericAddressesAreNeverResolved() async throws {
        let harness = try await GatewayHarness.start()
        let asked = Atomic<Int>(0)
        let directory = BackendDirectory(
            backends: ["echo": [SocketAddress(host: "127.0.0.1", port: 7501), SocketAddress(host: "::1", port: 7501)]],
            tls: try TLSContext(.client(trustRootsPath: "\(harness.directory)/ca.pem")), group: harness.clientGroup,
            connectionsPerBackend: 1, healthCheckInterval: .seconds(60), logger: Logger(label: "test", level: .error),
            resolve: { _ in
                asked.wrappingAdd(1, ordering: .relaxed)
                return []
            })
        await directory.resolveNames()
        #expect(asked.load(ordering: .relaxed) == 0)
        #expect(directory.pools["echo"]?.backends.count == 2)
        try await harness.stop()
    }

    private func expectEcho(through pool: BackendPool) async throws {
        let response = try await ServiceCaller(pool: pool).call(
            method: "rave.echo.v1.Echo/Echo", request: EchoV1.EchoRequest(payload: [42]).protobufBytes(),
            options: CallOptions(timeout: .seconds(5)))
        #expect(try EchoV1.EchoResponse(protobufBytes: response).payload == [42])
    }
}

/// What the stand-in for DNS throws when it has no answer.
private struct NoAnswer: Error {}
