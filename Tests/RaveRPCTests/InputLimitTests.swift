import RaveRPC
import RaveServices
import RaveTransport
import RaveWire
import Testing

/// The input budget (docs/PROTOCOL.md §11): how much of an unfinished frame a connection may make the server hold,
/// and for how long.
@Suite("Input limits", .timeLimit(.minutes(1)))
struct InputLimitTests {
    /// The wire bytes of an Echo REQUEST on `streamID` whose payload is `size` bytes.
    static func echoRequest(streamID: UInt32, size: Int) -> [UInt8] {
        let payload = EchoV1.EchoRequest(payload: Array(repeating: 0x61, count: size)).protobufBytes()
        let request = RpcV1.Request(method: echoMethod, timeoutMs: 0, metadata: [:], payload: payload)
        return Frame(type: .request, streamID: streamID, body: request.protobufBytes()).encoded()
    }

    /// Sends a small Echo on `streamID` and returns its answer.
    static func smallEcho(
        _ client: RawFrameClient, _ events: inout AsyncStream<RawFrameClient.Event>.Iterator, streamID: UInt32
    ) async throws -> RpcV1.Response {
        client.send(bytes: echoRequest(streamID: streamID, size: 3))
        let frame = try #require(await events.nextFrame())
        #expect(frame.streamID == streamID)
        return try #require(frame.response)
    }

    @Test func largeRequestBeforeAnySuccessfulCallIsRefusedWithoutBeingBuffered() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        // 1 MiB declared and a quarter of it sent: the server answers at once instead of waiting to hold it all.
        let large = Self.echoRequest(streamID: 1, size: 1 << 20)
        client.send(bytes: Array(large[..<(256 << 10)]))
        let refused = try #require(await events.nextFrame())
        #expect(refused.type == .response && refused.streamID == 1)
        #expect(refused.response?.code == .resourceExhausted)
        #expect(refused.response?.notProcessed == true)
        #expect(refused.response?.message.contains("once a call on this connection has succeeded") == true)
        #expect(server.server.bufferedInputBytes < 64 << 10)

        // The rest of the refused frame is skipped unread; the connection goes on serving small calls.
        client.send(bytes: Array(large[(256 << 10)...]))
        #expect(try await Self.smallEcho(client, &events, streamID: 2).code == .ok)
        client.close()
        await server.stop()
    }

    @Test func largeRequestIsServedAfterASuccessfulCall() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        #expect(try await Self.smallEcho(client, &events, streamID: 1).code == .ok)
        client.send(bytes: Self.echoRequest(streamID: 2, size: 1 << 20))
        let answer = try #require(await events.nextFrame())
        #expect(answer.streamID == 2 && answer.response?.code == .ok)
        #expect(try EchoV1.EchoResponse(protobufBytes: answer.response?.payload ?? []).payload.count == 1 << 20)
        client.close()
        await server.stop()
    }

    @Test func healthCheckDoesNotUnlockLargeRequests() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        client.sendRequest(
            streamID: 1, method: "rave.rpc.v1.Health/Check", payload: RpcV1.HealthCheckRequest().protobufBytes())
        #expect(try #require(await events.nextFrame()).response?.code == .ok)
        client.send(bytes: Self.echoRequest(streamID: 2, size: 100 << 10))
        #expect(try #require(await events.nextFrame()).response?.code == .resourceExhausted)
        client.close()
        await server.stop()
    }

    /// The gateway and services may send large frames at once; a certificate whose role proves nothing more (the
    /// client role) may not.
    @Test(arguments: [("gateway", StatusCode.ok), ("client", .resourceExhausted)])
    func peerWithAGatewayOrServiceRoleMaySendLargeRequestsAtOnce(
        certificate: String, expected: StatusCode
    )
        async throws
    {
        let server = try TestServer(mutualTLS: true)
        let client = try await RawFrameClient.connect(
            port: server.port, tls: try server.certificates.clientTLS(certificate: certificate), group: server.group)
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        client.send(bytes: Self.echoRequest(streamID: 1, size: 1 << 20))
        #expect(try #require(await events.nextFrame()).response?.code == expected)
        client.close()
        await server.stop()
    }

    @Test func largeRequestsBeyondTheServerWideBudgetAreRefusedUntilThereIsRoom() async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxBufferedInput = 3 << 19  // 1.5 MiB: room for one 1 MiB request at a time
        let server = try TestServer(configuration: configuration)
        let first = try await server.rawClient()
        let second = try await server.rawClient()
        var firstEvents = first.events.makeAsyncIterator()
        var secondEvents = second.events.makeAsyncIterator()
        first.sendHandshake()
        second.sendHandshake()
        #expect(try await Self.smallEcho(first, &firstEvents, streamID: 1).code == .ok)
        #expect(try await Self.smallEcho(second, &secondEvents, streamID: 1).code == .ok)

        // The first connection's 1 MiB request is half there: its whole size is reserved.
        let large = Self.echoRequest(streamID: 2, size: 1 << 20)
        first.send(bytes: Array(large[..<(512 << 10)]))
        try await eventually { server.server.bufferedInputBytes >= large.count }
        // The second's does not fit beside it.
        second.send(bytes: Self.echoRequest(streamID: 2, size: 1 << 20))
        let refused = try #require(await secondEvents.nextFrame()).response
        #expect(refused?.code == .resourceExhausted)
        #expect(refused?.notProcessed == true)
        #expect(server.server.framesRefusedForBudget == 1)

        // Once the first is served, the budget has room again.
        first.send(bytes: Array(large[(512 << 10)...]))
        #expect(try #require(await firstEvents.nextFrame()).response?.code == .ok)
        try await eventually { server.server.bufferedInputBytes == 0 }
        second.send(bytes: Self.echoRequest(streamID: 3, size: 1 << 20))
        #expect(try #require(await secondEvents.nextFrame()).response?.code == .ok)
        first.close()
        second.close()
        await server.stop()
    }

    @Test func budgetIsGivenBackWhenAConnectionClosesMidFrame() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        #expect(try await Self.smallEcho(client, &events, streamID: 1).code == .ok)
        client.send(bytes: Array(Self.echoRequest(streamID: 2, size: 2 << 20)[..<(100 << 10)]))
        try await eventually { server.server.bufferedInputBytes >= 2 << 20 }
        client.close()
        try await eventually { server.server.bufferedInputBytes == 0 }
        await server.stop()
    }

    @Test func frameThatStopsArrivingClosesTheConnection() async throws {
        var configuration = RPCServerConfiguration()
        configuration.stalledFrameTimeout = .seconds(30)
        let server = try InMemoryServer(configuration: configuration)
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        client.send(bytes: Array(Self.echoRequest(streamID: 1, size: 100)[..<50]))
        // The server holds the half frame (and watches it) once it counts its bytes.
        try await eventually { server.bufferedInputBytes > 0 }
        await server.clock.advance(by: .seconds(30))
        let error = try #require(await events.nextFrame())
        #expect(error.type == .error)
        #expect(try RpcV1.ProtocolError(protobufBytes: error.body).code == .deadlineExceeded)
        await events.waitForClose()
        #expect(server.bufferedInputBytes == 0)
        await server.stop()
    }

    @Test func connectionThatSendsNoHandshakeFrameIsClosed() async throws {
        var configuration = RPCServerConfiguration()
        configuration.handshakeTimeout = .seconds(30)
        let server = try InMemoryServer(configuration: configuration)
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        // The connection is active (its handshake timer armed) once the in-memory client is.
        await server.clock.advance(by: .seconds(30))
        let error = try #require(await events.nextFrame())
        #expect(error.type == .error)
        #expect(try RpcV1.ProtocolError(protobufBytes: error.body).code == .deadlineExceeded)
        await events.waitForClose()
        await server.stop()
    }
}

/// Polls `condition` every 10 ms until it holds; fails the test after `timeout`.
func eventually(
    timeout: Duration = .seconds(10), _ condition: @Sendable () async throws -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let end = ContinuousClock.now + timeout
    while ContinuousClock.now < end {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("the condition did not hold within \(timeout)", sourceLocation: sourceLocation)
}
