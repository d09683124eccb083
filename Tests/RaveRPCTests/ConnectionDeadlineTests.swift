import RaveMessages
import RaveRPC
import RaveServices
import RaveTestSupport
import RaveTransport
import RaveWire
import Testing

/// A connection keeps one deadline timer for all its calls (`ConnectionDeadlines`), and a server on the loop
/// starts a handler in place (`Task.immediateDetached`); these check that no call loses its deadline, its
/// cancellation or its answer by either.
@Suite("One deadline timer per connection, handlers started in place", .timeLimit(.minutes(1)))
struct ConnectionDeadlineTests {
    @Test func aShorterDeadlineAfterALongerOneExpiresOnTheServer() async throws {
        let server = try InMemoryServer(calls: CallLog(holdsCalls: true))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let slow = EchoV1.EchoAfterDelayRequest(payload: [1], delayMs: 20_000).protobufBytes()
        // The first call arms the connection's timer for 30 s; the second must arm it earlier.
        client.sendRequest(streamID: 1, method: echoAfterDelayMethod, payload: slow, timeoutMs: 30_000)
        client.sendRequest(streamID: 3, method: echoAfterDelayMethod, payload: slow, timeoutMs: 100)
        await server.calls.waitUntilStarted(2)
        await server.clock.advance(by: .milliseconds(100))
        let frame = try #require(await events.nextFrame())
        #expect(frame.streamID == 3)
        #expect(frame.response?.code == .deadlineExceeded)
        client.close()
        await server.stop()
    }

    @Test func theServerRearmsForTheNextDeadlineAfterOneFired() async throws {
        let server = try InMemoryServer(calls: CallLog(holdsCalls: true))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let slow = EchoV1.EchoAfterDelayRequest(payload: [1], delayMs: 20_000).protobufBytes()
        client.sendRequest(streamID: 1, method: echoAfterDelayMethod, payload: slow, timeoutMs: 100)
        client.sendRequest(streamID: 3, method: echoAfterDelayMethod, payload: slow, timeoutMs: 400)
        await server.calls.waitUntilStarted(2)
        await server.clock.advance(by: .milliseconds(100))
        let first = try #require(await events.nextFrame())
        // Only the first was due: a ping is answered before anything else comes.
        client.send(Frame(type: .ping, streamID: 0, body: [1]))
        #expect(try #require(await events.nextFrame()).type == .pong)
        await server.clock.advance(by: .milliseconds(300))
        let second = try #require(await events.nextFrame())
        #expect([first.streamID, second.streamID] == [1, 3])
        #expect(first.response?.code == .deadlineExceeded)
        #expect(second.response?.code == .deadlineExceeded)
        client.close()
        await server.stop()
    }

    @Test func pipelinedRequestsAreAnsweredAsTheirHandlersFinish() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let slow = EchoV1.EchoAfterDelayRequest(payload: [1], delayMs: 200).protobufBytes()
        let quick = EchoV1.EchoRequest(payload: [2]).protobufBytes()
        let failing = EchoV1.FailRequest(code: .notFound, message: "no such thing").protobufBytes()
        client.sendRequest(streamID: 1, method: echoAfterDelayMethod, payload: slow)
        client.sendRequest(streamID: 3, method: echoMethod, payload: quick)
        client.sendRequest(streamID: 5, method: "rave.echo.v1.Echo/Fail", payload: failing)
        var answers: [UInt32: RpcV1.Response] = [:]
        for _ in 0..<3 {
            let frame = try #require(await events.nextFrame())
            answers[frame.streamID] = frame.response
        }
        #expect(answers[1]?.code == .ok)
        #expect(try EchoV1.EchoResponse(protobufBytes: #require(answers[1]).payload).payload == [1])
        #expect(answers[3]?.code == .ok)
        #expect(try EchoV1.EchoResponse(protobufBytes: #require(answers[3]).payload).payload == [2])
        #expect(answers[5]?.code == .notFound)
        #expect(answers[5]?.message == "no such thing")
        client.close()
        await server.stop()
    }

    @Test func aClientCallExpiresAfterAnEarlierCallFinished() async throws {
        let clock = ManualLoopClock()
        let server = try TestServer(clock: clock, calls: CallLog(holdsCalls: true))
        let connection = try await server.connect()
        // The quick call arms the connection's timer for its deadline and leaves it armed when it finishes.
        let quick = try await EchoV1.EchoClient(caller: connection).echo(
            EchoV1.EchoRequest(payload: [4]), options: CallOptions(timeout: .milliseconds(300)))
        #expect(quick.payload == [4])
        let first = Task { try await echoAfterDelay(connection, delayMs: 20_000, timeout: .milliseconds(800)) }
        await server.calls.waitUntilStarted(1)
        await clock.advance(by: .milliseconds(800))
        await #expect { try await first.value } throws: { ($0 as? RPCError)?.code == .deadlineExceeded }
        // The timer fired and was armed again: a later call still expires, and the connection still works.
        let second = Task { try await echoAfterDelay(connection, delayMs: 20_000, timeout: .milliseconds(100)) }
        await server.calls.waitUntilStarted(2)
        await clock.advance(by: .milliseconds(100))
        await #expect { try await second.value } throws: { ($0 as? RPCError)?.code == .deadlineExceeded }
        server.calls.release()
        #expect(try await echoAfterDelay(connection, delayMs: 1, payload: [5]) == [5])
        connection.close()
        await server.stop()
    }

    @Test func aShorterClientDeadlineAfterALongerOneExpires() async throws {
        let clock = ManualLoopClock()
        let server = try TestServer(clock: clock, calls: CallLog(holdsCalls: true))
        let connection = try await server.connect()
        let long = Task { try await echoAfterDelay(connection, delayMs: 300, payload: [6], timeout: .seconds(30)) }
        await server.calls.waitUntilStarted(1)
        let short = Task { try await echoAfterDelay(connection, delayMs: 20_000, timeout: .milliseconds(100)) }
        await server.calls.waitUntilStarted(2)
        await clock.advance(by: .milliseconds(100))
        await #expect { try await short.value } throws: { ($0 as? RPCError)?.code == .deadlineExceeded }
        server.calls.release()
        #expect(try await long.value == [6])
        connection.close()
        await server.stop()
    }

    @Test func aHandlerStartedInPlaceIsCancelledWithItsCall() async throws {
        let server = try TestServer(calls: CallLog(holdsCalls: true))
        let connection = try await server.connect()
        let call = Task { try await echoAfterDelay(connection, delayMs: 20_000) }
        await server.calls.waitUntilStarted(1)
        call.cancel()
        await #expect { try await call.value } throws: { ($0 as? RPCError)?.code == .cancelled }
        server.calls.release()
        // The server dropped the call: the connection serves the next one.
        #expect(try await echoAfterDelay(connection, delayMs: 1, payload: [8]) == [8])
        connection.close()
        await server.stop()
    }
}
