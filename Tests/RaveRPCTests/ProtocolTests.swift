import RaveRPC
import RaveServices
import RaveWire
import Testing

/// Raw frames against the server's connection handling, in memory: what a misbehaving or foreign client may send.
///
/// `InMemoryServer` runs them without sockets; the last test closes a real TLS connection mid-frame.
@Suite("Protocol rules", .timeLimit(.minutes(1)))
struct ProtocolTests {
    @Test func serverHandshakeAnnouncesVersionAndLimits() async throws {
        let server = try InMemoryServer(configuration: RPCServerConfiguration(maxConcurrentStreams: 1234))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        let frame = try #require(await events.nextFrame(skipping: []))
        #expect(frame.type == .handshake && frame.streamID == 0)
        let handshake = try RpcV1.Handshake(protobufBytes: frame.body)
        #expect(handshake.protocolVersion == 1)
        #expect(handshake.maxConcurrentStreams == 1234)
        #expect(handshake.maxFrameSize == UInt32(Frame.defaultMaxFrameSize))
        client.close()
        await server.stop()
    }

    @Test func requestBeforeHandshakeIsAProtocolError() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendRequest(streamID: 1, method: echoMethod, payload: [])
        let frame = try #require(await events.nextFrame())
        #expect(frame.type == .error)
        await events.waitForClose()
        await server.stop()
    }

    @Test func versionMismatchIsRefused() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake(version: 2)
        let frame = try #require(await events.nextFrame())
        #expect(frame.type == .error)
        #expect(try RpcV1.ProtocolError(protobufBytes: frame.body).code == .failedPrecondition)
        await events.waitForClose()
        await server.stop()
    }

    @Test func pingIsAnsweredWithTheSameBody() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        client.send(Frame(type: .ping, streamID: 0, body: Array("hello".utf8)))
        let frame = try #require(await events.nextFrame())
        #expect(frame == Frame(type: .pong, streamID: 0, body: Array("hello".utf8)))
        client.close()
        await server.stop()
    }

    @Test func serverDeadlineAnswersDeadlineExceeded() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let request = EchoV1.EchoAfterDelayRequest(payload: [], delayMs: 10_000)
        client.sendRequest(streamID: 3, method: echoAfterDelayMethod, payload: request.protobufBytes(), timeoutMs: 100)
        await server.calls.waitUntilStarted(1)
        await server.clock.advance(by: .milliseconds(100))
        let frame = try #require(await events.nextFrame())
        #expect(frame.streamID == 3)
        #expect(frame.response?.code == .deadlineExceeded)
        client.close()
        await server.stop()
    }

    @Test func cancelFrameAnswersCancelled() async throws {
        let server = try InMemoryServer(calls: CallLog(holdsCalls: true))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let request = EchoV1.EchoAfterDelayRequest(payload: [], delayMs: 10_000)
        client.sendRequest(streamID: 5, method: echoAfterDelayMethod, payload: request.protobufBytes())
        await server.calls.waitUntilStarted(1)
        client.send(Frame(type: .cancel, streamID: 5))
        let frame = try #require(await events.nextFrame())
        #expect(frame.streamID == 5)
        #expect(frame.response?.code == .cancelled)
        client.close()
        await server.stop()
    }

    @Test func cancelledCallIsAnsweredExactlyOnceAndItsIdIsFreeAfterThat() async throws {
        let server = try InMemoryServer(calls: CallLog(holdsCalls: true))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let slow = EchoV1.EchoAfterDelayRequest(payload: [], delayMs: 10_000)
        client.sendRequest(streamID: 5, method: echoAfterDelayMethod, payload: slow.protobufBytes())
        await server.calls.waitUntilStarted(1)
        client.send(Frame(type: .cancel, streamID: 5))
        let cancelled = try #require(await events.nextFrame())
        #expect(cancelled.streamID == 5 && cancelled.response?.code == .cancelled)
        // A second CANCEL for the finished call is ignored; the id, answered, may carry a new call.
        client.send(Frame(type: .cancel, streamID: 5))
        client.sendRequest(streamID: 5, method: echoMethod, payload: EchoV1.EchoRequest(payload: [9]).protobufBytes())
        client.send(Frame(type: .ping, streamID: 0, body: [1]))
        let answer = try #require(await events.nextFrame())
        #expect(answer.streamID == 5 && answer.response?.code == .ok)
        // Nothing else came for stream 5 before the PONG.
        #expect(try #require(await events.nextFrame()).type == .pong)
        client.close()
        await server.stop()
    }

    @Test func duplicateInFlightStreamIDIsAProtocolError() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let request = EchoV1.EchoAfterDelayRequest(payload: [], delayMs: 5_000).protobufBytes()
        client.sendRequest(streamID: 7, method: echoAfterDelayMethod, payload: request)
        client.sendRequest(streamID: 7, method: echoAfterDelayMethod, payload: request)
        let frame = try #require(await events.nextFrame())
        #expect(frame.type == .error)
        #expect(try RpcV1.ProtocolError(protobufBytes: frame.body).message.contains("already in flight"))
        await events.waitForClose()
        await server.stop()
    }

    @Test func undecodableEnvelopeGetsAStreamLevelAnswer() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        client.send(Frame(type: .request, streamID: 9, body: [0xFF, 0xFF, 0xFF]))
        let frame = try #require(await events.nextFrame())
        #expect(frame.streamID == 9)
        #expect(frame.response?.code == .invalidArgument)
        client.close()
        await server.stop()
    }

    @Test func overLimitLengthGetsAnErrorFrameThenClose() async throws {
        let server = try InMemoryServer(configuration: RPCServerConfiguration(maxFrameSize: 1024))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        client.send(bytes: [0x7F, 0xFF, 0xFF, 0xFF, FrameType.request.rawValue, 0, 0, 0, 0, 1])
        let frame = try #require(await events.nextFrame())
        #expect(frame.type == .error)
        #expect(try RpcV1.ProtocolError(protobufBytes: frame.body).message.contains("exceeds the maximum"))
        await events.waitForClose()
        await server.stop()
    }

    @Test func unknownFrameTypeIsAProtocolError() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        client.send(bytes: [0, 0, 0, 6, 0x42, 0, 0, 0, 0, 0])
        #expect(try #require(await events.nextFrame()).type == .error)
        await events.waitForClose()
        await server.stop()
    }

    @Test func truncatedFrameThenCloseLeavesTheServerServing() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        client.sendHandshake()
        let request = Frame(type: .request, streamID: 1, body: Array(repeating: 0, count: 100)).encoded()
        client.send(bytes: Array(request.prefix(50)))
        try await Task.sleep(for: .milliseconds(50))
        client.close()
        let connection = try await server.connect()
        #expect(try await echoAfterDelay(connection, delayMs: 0) == [1])
        connection.close()
        await server.stop()
    }
}
