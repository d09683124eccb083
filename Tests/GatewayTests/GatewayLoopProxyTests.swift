import RaveMessages
import RaveRPC
import Synchronization
import Testing

@testable import Gateway

/// Single calls served on the client connection's event loop (`CallPipeline.startProxy`): once a token is
/// cached and the loop has its backend connection, calls take this path, and they must behave exactly like
/// calls of the general path.
@Suite("Gateway loop proxy")
struct GatewayLoopProxyTests {
    @Test func warmCallsTakeTheLoopPathAndPassTheSameCaller() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"))
        let first = try await whoami(connection, options: options)
        try await warmUp(harness, connection, options: options)
        let proxied = harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed)
        let second = try await whoami(connection, options: options)
        #expect(harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed) == proxied + 1)
        #expect(second == first)
        #expect(second.hasPrefix("user-1|") && second.hasSuffix("|-"), "\(second)")
        #expect(harness.runtime.pipeline.protection.inFlight.current == 0)
        connection.close()
        try await harness.stop()
    }

    @Test func loopPathPassesStatusesAndEnforcesDeadlines() async throws {
        let harness = try await GatewayHarness.start(["RAVE_GATEWAY_DEADLINE_MARGIN": "100ms"])
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"), timeout: .seconds(2))
        try await warmUp(harness, connection, options: options)
        let proxied = harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed)

        let failing = EchoV1.FailRequest(code: .failedPrecondition, message: "board is closed").protobufBytes()
        #expect(
            await failure(connection, "rave.echo.v1.Echo/Fail", failing, options: options)
                == RPCError(.failedPrecondition, "board is closed"))
        let seen = try #require(harness.echo.remainingMilliseconds.withLock { $0.last })
        #expect(seen <= 1900 && seen > 1500, "the service saw \(seen) ms")

        let slow = EchoV1.EchoAfterDelayRequest(payload: [1], delayMs: 2000).protobufBytes()
        let error = await failure(
            connection, "rave.echo.v1.Echo/EchoAfterDelay", slow,
            options: bearer(try harness.token(for: "user-1"), timeout: .milliseconds(300)))
        #expect(error?.code == .deadlineExceeded)
        #expect(harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed) >= proxied + 1)
        #expect(harness.runtime.pipeline.protection.inFlight.current == 0)
        connection.close()
        try await harness.stop()
    }

    @Test func cancellingALoopPathCallCancelsTheBackendCall() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"), timeout: .seconds(10))
        try await warmUp(harness, connection, options: options)
        let proxied = harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed)
        try await cancelALongCall(harness, connection, options: options)
        #expect(harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed) == proxied + 1)
        #expect(harness.echo.cancelledCalls.load(ordering: .relaxed) == 1)
        #expect(harness.runtime.pipeline.protection.inFlight.current == 0)
        connection.close()
        try await harness.stop()
    }

    /// Calls until one took the loop path (the token is cached after the first call; the loop's backend
    /// connection is opened in the background on the first call that wanted it).
    private func warmUp(
        _ harness: GatewayHarness, _ connection: RPCConnection, options: CallOptions
    ) async throws {
        let before = harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed)
        for _ in 0..<200 {
            _ = try await whoami(connection, options: options)
            if harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed) > before { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("no call took the loop path")
    }

    private func whoami(_ connection: RPCConnection, options: CallOptions) async throws -> String {
        let response = try await connection.call(
            method: "rave.echo.v1.Echo/Echo",
            request: EchoV1.EchoRequest(payload: Array("whoami".utf8)).protobufBytes(),
            options: options)
        return String(decoding: try EchoV1.EchoResponse(protobufBytes: response).payload, as: UTF8.self)
    }
}
