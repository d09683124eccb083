import RaveRPC
import RaveServices
import RaveTestSupport
import RaveTransport
import RaveWire
import Testing

@Suite("Drain and reconnect", .timeLimit(.minutes(1)))
struct DrainTests {
    @Test func requestAfterGoAwayIsUnavailableNotProcessed() async throws {
        let server = try InMemoryServer(calls: CallLog(holdsCalls: true))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let slow = EchoV1.EchoAfterDelayRequest(payload: [7], delayMs: 1000).protobufBytes()
        client.sendRequest(streamID: 1, method: echoAfterDelayMethod, payload: slow)
        await server.calls.waitUntilStarted(1)
        let drain = Task { await server.drain() }
        let goAway = try #require(await events.nextFrame())
        #expect(goAway.type == .goAway)
        #expect(try RpcV1.GoAway(protobufBytes: goAway.body).lastStreamId == 1)
        client.sendRequest(streamID: 2, method: echoMethod, payload: [])
        let refused = try #require(await events.nextFrame())
        #expect(refused.streamID == 2)
        #expect(refused.response?.code == .unavailable)
        #expect(refused.response?.notProcessed == true)
        // The call in flight before GOAWAY still finishes, and its answer is the last frame.
        server.calls.release()
        let answered = try #require(await events.nextFrame())
        #expect(answered.streamID == 1 && answered.response?.code == .ok)
        #expect(try EchoV1.EchoResponse(protobufBytes: answered.response?.payload ?? []).payload == [7])
        await events.waitForClose()
        await drain.value
        await server.stop()
    }

    @Test func drainWhileBusyFinishesInFlightCalls() async throws {
        // Real TLS and the real client: the calls are held until the drain began, so all twenty are in flight when
        // GOAWAY goes out (with a fixed pause, a loaded machine sent some after it and they were refused).
        let server = try TestServer(calls: CallLog(holdsCalls: true))
        let connection = try await server.connect()
        let calls = (0..<20).map { index in
            Task { try await echoAfterDelay(connection, delayMs: 200, payload: [UInt8(index)]) }
        }
        await server.calls.waitUntilStarted(20)
        let drain = Task { await server.server.drain() }
        // The client stops using the connection once GOAWAY arrived.
        try await eventually { !connection.isUsable }
        server.calls.release()
        await drain.value
        for (index, call) in calls.enumerated() {
            #expect(try await call.value == [UInt8(index)])
        }
        await #expect { try await echoAfterDelay(connection, delayMs: 0) } throws: {
            ($0 as? RPCError)?.notProcessed == true
        }
        server.group.shutdown()
    }

    @Test func callsStillRunningWhenTheGraceEndsAreAnsweredUnavailable() async throws {
        let server = try InMemoryServer(
            configuration: RPCServerConfiguration(drainGracePeriod: .seconds(10)), calls: CallLog(holdsCalls: true))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let slow = EchoV1.EchoAfterDelayRequest(payload: [7], delayMs: 20_000).protobufBytes()
        client.sendRequest(streamID: 1, method: echoAfterDelayMethod, payload: slow)
        client.sendRequest(streamID: 2, method: echoAfterDelayMethod, payload: slow)
        await server.calls.waitUntilStarted(2)
        let drain = Task { await server.drain() }
        #expect(try #require(await events.nextFrame()).type == .goAway)
        // The held handlers never finish by themselves: the grace period's end (before the calls' 30 s default
        // deadline) answers them.
        await server.clock.advance(by: .seconds(10))
        var responses: [UInt32: RpcV1.Response] = [:]
        while responses.count < 2, let frame = await events.nextFrame() {
            responses[frame.streamID] = frame.response
        }
        for streamID: UInt32 in [1, 2] {
            #expect(responses[streamID]?.code == .unavailable)
            // The handler had started: the call may have had an effect.
            #expect(responses[streamID]?.notProcessed == false)
        }
        await events.waitForClose()
        await drain.value
        await server.stop()
    }

    @Test func clientReconnectsAfterServerRestart() async throws {
        let first = try TestServer()
        let port = first.port
        let client = RPCClient(
            host: "127.0.0.1", port: port, tls: try first.certificates.clientTLS(), group: first.group)
        #expect(try await echoAfterDelay(client, delayMs: 0) == [1])
        await first.server.drain()

        let second = RPCServer(
            configuration: RPCServerConfiguration(port: port), services: [TestEchoService()], access: .open,
            tls: try first.certificates.serverTLS(), group: first.group)
        try second.start()
        var answer: [UInt8]?
        for _ in 0..<50 where answer == nil {
            answer = try? await echoAfterDelay(client, delayMs: 0)
            if answer == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(answer == [1])
        client.close()
        await second.drain()
        first.group.shutdown()
    }
}

@Suite("Idle connections", .timeLimit(.minutes(1)))
struct IdleTests {
    @Test func idleConnectionIsClosedWithGoAway() async throws {
        let server = try InMemoryServer(configuration: RPCServerConfiguration(idleTimeout: .seconds(300)))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        // The PONG shows the server has read everything sent; from then on the connection is idle.
        client.send(Frame(type: .ping, streamID: 0, body: [1]))
        #expect(try #require(await events.nextFrame()).type == .pong)
        // Short of the idle timeout nothing happens: the next ping is answered, and no GOAWAY came before it.
        await server.clock.advance(by: .seconds(299))
        client.send(Frame(type: .ping, streamID: 0, body: [2]))
        #expect(try #require(await events.nextFrame()).type == .pong)
        // A full idle timeout after that ping, the connection drains.
        await server.clock.advance(by: .seconds(300))
        #expect(try #require(await events.nextFrame()).type == .goAway)
        await events.waitForClose()
        await server.stop()
    }
}
