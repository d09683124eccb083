import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

@testable import RaveHTTP

/// The connection's protocol logic over an in-memory channel, with timers on a manual clock: answers in order,
/// the stalled-request and idle timeouts, errors, back pressure and draining.
@Suite struct HTTPServerConnectionTests {
    /// Answers `/slow` when the test releases it, `/fast` at once with its path, anything else 404; on the loop,
    /// `/now` at once, `/held` when the test calls `held.respond`, and `/declined` by declining (then off the loop).
    final class Responder: HTTPResponder {
        let slowStarted = Gate()
        let releaseSlow = Gate()
        let held = HeldAnswer()

        func answer(_ request: HTTPServerRequest, from connection: HTTPConnectionInfo) -> HTTPAnswer {
            switch request.path {
            case "/now":
                return .onLoop(
                    start: { _, respond in
                        respond(HTTPServerResponse(status: .ok, contentType: "text/plain", text: "now"))
                        return {}
                    }, otherwise: { HTTPServerResponse(status: .internalServerError) })
            case "/held":
                return .onLoop(
                    start: { [held] _, respond in held.hold(respond) },
                    otherwise: { HTTPServerResponse(status: .internalServerError) })
            case "/declined":
                return .onLoop(
                    start: { _, _ in nil },
                    otherwise: { HTTPServerResponse(status: .ok, contentType: "text/plain", text: "otherwise") })
            case "/slow":
                return .deferred { [slowStarted, releaseSlow] in
                    slowStarted.open()
                    await releaseSlow.wait()
                    return HTTPServerResponse(status: .ok, contentType: "text/plain", text: "slow")
                }
            case "/fast", "/echo":
                return .immediate(
                    HTTPServerResponse(
                        status: .ok, contentType: "text/plain",
                        text: String(request.path) + ":" + String(decoding: request.body, as: UTF8.self)))
            default:
                return .immediate(HTTPServerResponse(status: .notFound, contentType: "text/plain", text: "no"))
            }
        }

        func answer(_ error: HTTPParseError, from connection: HTTPConnectionInfo) -> HTTPServerResponse {
            HTTPServerResponse(status: error.status, contentType: "text/plain", text: error.reason)
        }
    }

    /// The `respond` of a `/held` answer until the test gives its response, and whether it was cancelled.
    final class HeldAnswer: @unchecked Sendable {
        // @unchecked: `respond` is set and called on the connection's loop only; the flags are atomics.
        private var respond: ((HTTPServerResponse) -> Void)?
        let started = Atomic(false)
        let cancelled = Atomic(false)

        func hold(_ respond: @escaping (HTTPServerResponse) -> Void) -> (() -> Void)? {
            self.respond = respond
            started.store(true, ordering: .sequentiallyConsistent)
            return { [self] in cancelled.store(true, ordering: .sequentiallyConsistent) }
        }

        /// Gives the held answer its response, on `loop`.
        func release(on loop: EventLoop, text: String) {
            loop.execute { [self] in
                respond?(HTTPServerResponse(status: .ok, contentType: "text/plain", text: text))
                respond = nil
            }
        }
    }

    /// A connection under test: the server side runs `HTTPServerConnection`, the test holds the other end.
    struct Harness {
        let clock: ManualLoopClock
        let group: EventLoopGroup
        let peer: RecordingPeer
        let channel: Channel
        let responder: Responder
        let registry: HTTPConnectionRegistry

        static let settings: HTTPServerSettings = {
            var settings = HTTPServerSettings(
                limits: HTTPLimits(maxHeadBytes: 1024, maxHeaderCount: 16, maxBodyBytes: 256),
                stalledRequestTimeout: .seconds(10), idleTimeout: .seconds(300))
            settings.maxBufferedInput = 2048
            return settings
        }()

        static func start() async throws -> Harness {
            let clock = ManualLoopClock()
            let group = try clock.makeGroup()
            let peer = RecordingPeer()
            let responder = Responder()
            let registry = HTTPConnectionRegistry()
            let channel = try await InMemoryConnection.connect(on: group.next(), peer: peer) { channel in
                HTTPServerConnection(channel: channel, settings: settings, responder: responder, registry: registry)
            }
            return Harness(
                clock: clock, group: group, peer: peer, channel: channel, responder: responder, registry: registry)
        }

        func send(_ text: String) {
            let channel = self.channel
            channel.loop.execute {
                channel.write(Array(text.utf8))
                channel.flush()
            }
        }

        func stop() {
            let channel = self.channel
            channel.loop.execute { channel.closeNow() }
            group.shutdown()
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrderEvenWhenTheFirstIsSlow() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\nGET /fast HTTP/1.1\r\nHost: a\r\n\r\n")
        await harness.responder.slowStarted.wait()
        // The fast answer is ready, but it must wait for the slow one before it.
        #expect(harness.peer.text.isEmpty)
        harness.responder.releaseSlow.open()
        let text = try await harness.peer.waitFor { $0.components(separatedBy: "HTTP/1.1 200").count == 3 }
        let slow = try #require(text.range(of: "slow"))
        let fast = try #require(text.range(of: "/fast:"))
        #expect(slow.lowerBound < fast.lowerBound)
    }

    @Test func answersOnTheLoopKeepTheOrderWhetherGivenAtOnceLaterOrDeclined() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send(
            "GET /held HTTP/1.1\r\nHost: a\r\n\r\nGET /now HTTP/1.1\r\nHost: a\r\n\r\n"
                + "GET /declined HTTP/1.1\r\nHost: a\r\n\r\nGET /now HTTP/1.1\r\nHost: a\r\n\r\n")
        try await eventually { harness.responder.held.started.load(ordering: .sequentiallyConsistent) }
        // The later requests wait for the held answer before them.
        #expect(harness.peer.text.isEmpty)
        harness.responder.held.release(on: harness.channel.loop, text: "held")
        let text = try await harness.peer.waitFor { $0.components(separatedBy: "HTTP/1.1 200").count == 5 }
        let bodies = ["held", "now", "otherwise", "now"].map { "\r\n\r\n" + $0 }
        var rest = Substring(text)
        for body in bodies {
            let range = try #require(rest.range(of: body), "\(body) in \(text)")
            rest = rest[range.upperBound...]
        }
        let cancelled = harness.responder.held.cancelled.load(ordering: .sequentiallyConsistent)
        #expect(!cancelled)
    }

    @Test func aConnectionThatClosesCancelsTheAnswerUnderWayOnTheLoop() async throws {
        let harness = try await Harness.start()
        harness.send("GET /held HTTP/1.1\r\nHost: a\r\n\r\n")
        try await eventually { harness.responder.held.started.load(ordering: .sequentiallyConsistent) }
        harness.stop()
        try await eventually { harness.responder.held.cancelled.load(ordering: .sequentiallyConsistent) }
        #expect(harness.peer.text.isEmpty)
    }

    @Test func aStalledHeadIsAnswered408AndClosed() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send("GET /fast HTTP/1.1\r\nHost: a\r\n")
        try await eventually { await harness.serverHasPartialRequest() }
        await harness.clock.advance(by: .seconds(9))
        #expect(!harness.peer.isClosed)
        await harness.clock.advance(by: .seconds(2))
        let text = try await harness.peer.waitForClose()
        #expect(text.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        #expect(text.contains("Connection: close\r\n"))
    }

    @Test func aStalledBodyIsAnswered408() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
        try await eventually { await harness.serverHasPartialRequest() }
        await harness.clock.advance(by: .seconds(11))
        let text = try await harness.peer.waitForClose()
        #expect(text.hasPrefix("HTTP/1.1 408 "))
    }

    @Test func anIdleKeepAliveConnectionIsClosedAfterTheIdleTimeout() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")
        _ = try await harness.peer.waitFor { $0.hasSuffix("/fast:") }
        // Idle is not stalled: nothing of a next request has arrived, so no 408 comes.
        await harness.clock.advance(by: .seconds(200))
        #expect(!harness.peer.isClosed)
        await harness.clock.advance(by: .seconds(101))
        let text = try await harness.peer.waitForClose()
        #expect(!text.contains("408"))
    }

    @Test func aMalformedRequestIsAnsweredAfterTheOnesBeforeItThenClosed() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send(
            "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n"
                + "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")
        let text = try await harness.peer.waitForClose()
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("HTTP/1.1 400 Bad Request\r\n"))
        #expect(text.components(separatedBy: "HTTP/1.1 ").count == 3)
    }

    @Test func aChunkedBodyAndExpectContinue() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send(
            "POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n")
        _ = try await harness.peer.waitFor { $0 == "HTTP/1.1 100 Continue\r\n\r\n" }
        harness.send("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
        _ = try await harness.peer.waitFor { $0.hasSuffix("/echo:abcde") }
    }

    @Test func headAnswersCarryNoBodyAndConnectionCloseIsHonoured() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send("HEAD /fast HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        let text = try await harness.peer.waitForClose()
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 6\r\nConnection: close\r\n\r\n")
    }

    @Test func readingPausesWhilePipelinedInputPilesUpAndResumesAfter() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        await harness.responder.slowStarted.wait()
        let pipelined = String(repeating: "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n", count: 100)
        harness.send(pipelined)
        try await eventually { await harness.serverReadingPaused() }
        harness.responder.releaseSlow.open()
        let text = try await harness.peer.waitFor { $0.components(separatedBy: "/fast:").count == 101 }
        #expect(text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(await !harness.serverReadingPaused())
    }

    @Test func drainingClosesAnIdleConnectionAndAnswersABusyOneWithClose() async throws {
        let harness = try await Harness.start()
        defer { harness.stop() }
        harness.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        await harness.responder.slowStarted.wait()
        for connection in harness.registry.startDraining() {
            connection.channel.loop.execute { connection.startDraining() }
        }
        harness.responder.releaseSlow.open()
        let text = try await harness.peer.waitForClose()
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Connection: close\r\n"))
    }
}

extension HTTPServerConnectionTests.Harness {
    /// Whether the server end of the connection stopped reading.
    func serverReadingPaused() async -> Bool {
        await onServerLoop { $0.channel.isReadingPaused }
    }

    /// Whether the server end holds part of a request.
    func serverHasPartialRequest() async -> Bool {
        await onServerLoop { $0.hasPartialRequest }
    }

    private func onServerLoop(_ read: @escaping @Sendable (HTTPServerConnection) -> Bool) async -> Bool {
        guard let connection = registry.all.first as? HTTPServerConnection else { return false }
        return await withCheckedContinuation { continuation in
            connection.channel.loop.execute { continuation.resume(returning: read(connection)) }
        }
    }
}

/// A one-shot signal between a test and code it drives.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isOpen = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if isOpen { continuation.resume() }
        }
    }
}

/// The test's end of an in-memory connection: records what the server wrote and whether it closed.
final class RecordingPeer: ChannelHandler, Sendable {
    let received = ReceivedBytes()

    var text: String { String(decoding: received.current.bytes, as: UTF8.self) }
    var isClosed: Bool { received.current.closed }

    func channelActive(_ channel: Channel) {}

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        received.append(bytes)
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        received.markClosed()
    }

    /// Waits until the text received satisfies `condition`.
    @discardableResult
    func waitFor(_ condition: @escaping (String) -> Bool) async throws -> String {
        try await received.wait { bytes, _ in
            let text = String(decoding: bytes, as: UTF8.self)
            return condition(text) ? text : nil
        }
    }

    /// Waits until the server closed the connection; returns everything it wrote.
    func waitForClose() async throws -> String {
        try await received.wait { bytes, closed in closed ? String(decoding: bytes, as: UTF8.self) : nil }
    }
}
