import RaveRPC
import RaveServices
import RaveTransport
import RaveWire
import Testing

@Suite("Drain and reconnect", .timeLimit(.minutes(1)))
struct DrainTests {
    @Test func requestAfterGoAwayIsUnavailableNotProcessed() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let slow = EchoV1.EchoAfterDelayRequest(payload: [7], delayMs: 1000).protobufBytes()
        client.sendRequest(streamID: 1, method: echoAfterDelayMethod, payload: slow)
        try await Task.sleep(for: .milliseconds(50))
        let drain = Task { await server.server.drain() }
        let goAway = try #require(await events.nextFrame())
        #expect(goAway.type == .goAway)
        #expect(try RpcV1.GoAway(protobufBytes: goAway.body).lastStreamId == 1)
        client.sendRequest(streamID: 2, method: echoMethod, payload: [])
        var responses: [UInt32: RpcV1.Response] = [:]
        while responses.count < 2, let frame = await events.nextFrame() {
            responses[frame.streamID] = frame.response
        }
        #expect(responses[2]?.code == .unavailable)
        #expect(responses[2]?.notProcessed == true)
        #expect(responses[1]?.code == .ok)
        #expect(try EchoV1.EchoResponse(protobufBytes: responses[1]?.payload ?? []).payload == [7])
        await events.waitForClose()
        await drain.value
        server.group.shutdown()
    }

    @Test func drainWhileBusyFinishesInFlightCalls() async throws {
        let server = try TestServer()
        let connection = try await server.connect()
        let calls = (0..<20).map { index in
            Task { try await echoAfterDelay(connection, delayMs: 200, payload: [UInt8(index)]) }
        }
        try await Task.sleep(for: .milliseconds(50))
        await server.server.drain()
        for (index, call) in calls.enumerated() {
            #expect(try await call.value == [UInt8(index)])
        }
        await #expect { try await echoAfterDelay(connection, delayMs: 0) } throws: {
            ($0 as? RPCError)?.notProcessed == true
        }
        server.group.shutdown()
    }

    @Test func callsStillRunningWhenTheGraceEndsAreAnsweredUnavailable() async throws {
        let server = try TestServer(configuration: RPCServerConfiguration(drainGracePeriod: .milliseconds(200)))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let slow = EchoV1.EchoAfterDelayRequest(payload: [7], delayMs: 20_000).protobufBytes()
        client.sendRequest(streamID: 1, method: echoAfterDelayMethod, payload: slow)
        client.sendRequest(streamID: 2, method: echoAfterDelayMethod, payload: slow)
        try await Task.sleep(for: .milliseconds(50))
        let drain = Task { await server.server.drain() }
        #expect(try #require(await events.nextFrame()).type == .goAway)
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
        server.group.shutdown()
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
        let server = try TestServer(configuration: RPCServerConfiguration(idleTimeout: .milliseconds(200)))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let started = ContinuousClock.now
        #expect(try #require(await events.nextFrame()).type == .goAway)
        await events.waitForClose()
        #expect(ContinuousClock.now - started < .seconds(5))
        await server.stop()
    }
}
