import RaveRPC
import RaveServices
import RaveTestSupport
import RaveTransport
import Testing

@Suite("Calls started on the event loop", .timeLimit(.minutes(1)))
struct LoopCallbackCallTests {
    @Test func startCallDeliversTheResponseOnTheConnectionsLoop() async throws {
        let server = try TestServer()
        defer { server.group.shutdown() }
        let connection = try await server.connect()
        let request = EchoV1.EchoRequest(payload: [1, 2, 3]).protobufBytes()
        let (result, completedOnLoop) = await withCheckedContinuation { continuation in
            connection.eventLoop.execute {
                connection.startCall(method: echoMethod, request: request, options: CallOptions()) { result in
                    continuation.resume(returning: (result, connection.eventLoop.isInLoop))
                }
            }
        }
        #expect(completedOnLoop)
        #expect(try EchoV1.EchoResponse(protobufBytes: result.get()).payload == [1, 2, 3])
        connection.close()
    }

    @Test func startCallFailsWithDeadlineExceededWhenTheServerIsSlow() async throws {
        let clock = ManualLoopClock()
        let server = try TestServer(clock: clock, calls: CallLog(holdsCalls: true))
        defer { server.group.shutdown() }
        let connection = try await server.connect()
        let request = EchoV1.EchoAfterDelayRequest(payload: [9], delayMs: 2000).protobufBytes()
        let call = Task {
            await withCheckedContinuation { continuation in
                connection.eventLoop.execute {
                    connection.startCall(
                        method: echoAfterDelayMethod, request: request,
                        options: CallOptions(timeout: .milliseconds(100))
                    ) { continuation.resume(returning: $0) }
                }
            }
        }
        // The handler holds the call; the clock passes its deadline.
        await server.calls.waitUntilStarted(1)
        await clock.advance(by: .milliseconds(100))
        let result = await call.value
        guard case .failure(let error) = result else {
            Issue.record("a call slower than its deadline succeeded")
            return
        }
        #expect(error.code == .deadlineExceeded)
        connection.close()
    }

    @Test func handlersOnTheLoopStillExpireAtTheirDeadline() async throws {
        let server = try InMemoryServer(calls: CallLog(holdsCalls: true))
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let slow = EchoV1.EchoAfterDelayRequest(payload: [7], delayMs: 5000).protobufBytes()
        client.sendRequest(streamID: 1, method: echoAfterDelayMethod, payload: slow, timeoutMs: 100)
        // The handler, started on the loop, never answers by itself: the deadline does.
        await server.calls.waitUntilStarted(1)
        await server.clock.advance(by: .milliseconds(100))
        let frame = try #require(await events.nextFrame())
        #expect(frame.response?.code == .deadlineExceeded)
        await server.stop()
    }
}
