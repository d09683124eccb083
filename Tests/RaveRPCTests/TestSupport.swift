import Foundation
import Glibc
import RaveServices
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import RaveWire
import Synchronization

@testable import RaveRPC

/// Development certificates for the tests of this process.
struct TestCertificates {
    let directory: String

    /// The dev CA and the "echo" and "client" certificates, written once per test process into a directory that
    /// is removed when the process exits: a directory per test was never removed (thousands piled up in /tmp),
    /// and deleting one when its test's value goes away could pull files from under a server still reading them.
    private static let shared = Result { () throws -> String in
        var template = Array("/tmp/rave-rpc-tests-XXXXXX".utf8CString)
        guard let path = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
        let directory = String(cString: path)
        try DevelopmentCertificates.write(to: directory, services: ["echo", "client", "gateway"])
        removedAtExit.withLock { $0 = directory }
        atexit {
            if let directory = TestCertificates.removedAtExit.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        return directory
    }

    private static let removedAtExit = Mutex<String?>(nil)

    init() throws {
        directory = try Self.shared.get()
    }

    func serverTLS(requireClientCertificate: Bool = false) throws -> TLSContext {
        try TLSContext(
            .server(
                certificateChainPath: "\(directory)/echo.pem", privateKeyPath: "\(directory)/echo-key.pem",
                trustRootsPath: "\(directory)/ca.pem", requireClientCertificate: requireClientCertificate))
    }

    func clientTLS(withCertificate: Bool = false) throws -> TLSContext {
        try clientTLS(certificate: withCertificate ? "client" : nil)
    }

    /// A client presenting the development certificate `certificate` ("client", "gateway"), or none.
    func clientTLS(certificate: String?) throws -> TLSContext {
        try TLSContext(
            .client(
                trustRootsPath: "\(directory)/ca.pem",
                certificateChainPath: certificate.map { "\(directory)/\($0).pem" },
                privateKeyPath: certificate.map { "\(directory)/\($0)-key.pem" }))
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}

/// The echo service the tests call; `echoAfterDelay` sleeps cancellably, as ravectl's does, or waits for the
/// test to release it (`CallLog(holdsCalls: true)`), and tells `calls` it started either way.
struct TestEchoService: EchoV1.EchoHandler {
    var calls = CallLog()

    /// Echoes the payload; the payload "metadata" is answered with the metadata the handler read instead.
    func echo(_ request: EchoV1.EchoRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        guard request.payload == Array("metadata".utf8) else { return EchoV1.EchoResponse(payload: request.payload) }
        return EchoV1.EchoResponse(payload: Array(Self.describeMetadata(context.metadata).utf8))
    }

    /// `metadata` as `echo` answers it: "key=value" pairs in key order, joined by ";".
    static func describeMetadata(_ metadata: [String: String]) -> String {
        metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";")
    }

    func echoAfterDelay(
        _ request: EchoV1.EchoAfterDelayRequest, context: RequestContext
    ) async throws -> EchoV1.EchoResponse {
        calls.started()
        if calls.holdsCalls {
            try await calls.waitForRelease()
        } else {
            try await Task.sleep(for: .milliseconds(Int(request.delayMs)))
        }
        return EchoV1.EchoResponse(payload: request.payload)
    }

    func fail(_ request: EchoV1.FailRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        throw RPCError(request.code, request.message)
    }
}

/// The `EchoAfterDelay` calls a test's echo service has started, and a gate that holds them until the test
/// releases it: a test waits for the calls it made to be in flight instead of sleeping and hoping they are.
final class CallLog: Sendable {
    private struct State {
        var started = 0
        var released = false
        var startWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var releaseWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter: UInt64 = 0
    }

    /// Whether `EchoAfterDelay` waits for `release()` instead of sleeping its delay.
    let holdsCalls: Bool
    private let state = Mutex(State())

    init(holdsCalls: Bool = false) {
        self.holdsCalls = holdsCalls
    }

    /// `EchoAfterDelay` calls started so far.
    var startedCount: Int { state.withLock { $0.started } }

    /// Returns once `count` calls have started.
    func waitUntilStarted(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.started < count else { return true }
                state.startWaiters.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets every held call, and every later one, finish.
    func release() {
        let waiters = state.withLock { state in
            state.released = true
            defer { state.releaseWaiters = [:] }
            return Array(state.releaseWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    fileprivate func started() {
        let ready = state.withLock { state in
            state.started += 1
            let count = state.started
            defer { state.startWaiters.removeAll { $0.count <= count } }
            return state.startWaiters.filter { $0.count <= count }.map(\.continuation)
        }
        for waiter in ready { waiter.resume() }
    }

    /// Waits for `release()`; throws CancellationError when the call's task is cancelled first.
    fileprivate func waitForRelease() async throws {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.released { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.releaseWaiters[id] = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = self.state.withLock { $0.releaseWaiters.removeValue(forKey: id) }
            waiter?.resume(throwing: CancellationError())
        }
    }
}

/// A running echo server with its own event loops and certificates, plus ways to reach it.
final class TestServer: Sendable {
    let certificates: TestCertificates
    let group: EventLoopGroup
    let server: RPCServer
    let calls: CallLog

    /// `clock`: the server's (and its clients') timers follow it instead of the system's clock.
    init(
        configuration: RPCServerConfiguration = RPCServerConfiguration(), mutualTLS: Bool = false,
        clock: ManualLoopClock? = nil, calls: CallLog = CallLog()
    ) throws {
        certificates = try TestCertificates()
        group = try clock?.makeGroup(loopCount: 2) ?? EventLoopGroup(loopCount: 2)
        self.calls = calls
        var configuration = configuration
        configuration.requestLogLevel = .debug
        server = RPCServer(
            configuration: configuration, services: [TestEchoService(calls: calls)], access: .open,
            tls: try certificates.serverTLS(requireClientCertificate: mutualTLS), group: group,
            logger: Logger(label: "test.server", level: .error))
        try server.start()
    }

    var port: Int { server.localPort }

    func connect(withCertificate: Bool = false) async throws -> RPCConnection {
        try await RPCConnection.connect(
            host: "127.0.0.1", port: port, tls: try certificates.clientTLS(withCertificate: withCertificate),
            group: group, logger: Logger(label: "test.client", level: .error))
    }

    func rawClient() async throws -> RawFrameClient {
        try await RawFrameClient.connect(port: port, tls: try certificates.clientTLS(), group: group)
    }

    func stop() async {
        await server.shutdown()
        group.shutdown()
    }
}

/// The echo server's connection handling (`ServerConnection`) without a listener, TCP or TLS: each raw client is
/// joined to a connection of its own by an `InMemoryConnection`, on one loop whose timers follow `clock`.
///
/// For tests of what a connection answers and when (frames, deadlines, idle and stalled connections, the drain
/// grace period); a peer here has no certificate, so no role. Tests of TLS, accepting and limits per address use
/// `TestServer`.
final class InMemoryServer: Sendable {
    let clock: ManualLoopClock
    let group: EventLoopGroup
    let calls: CallLog
    private let router: RPCRouter
    private let registry: ConnectionRegistry

    init(configuration: RPCServerConfiguration = RPCServerConfiguration(), calls: CallLog = CallLog()) throws {
        let clock = ManualLoopClock()
        self.clock = clock
        group = try clock.makeGroup()
        self.calls = calls
        var configuration = configuration
        configuration.requestLogLevel = .debug
        router = RPCRouter(
            services: [TestEchoService(calls: calls)], access: .open, configuration: configuration,
            logger: Logger(label: "test.server", level: .error), observer: SilentServerObserver())
        registry = ConnectionRegistry(inputBudget: InputBudget(limit: configuration.maxBufferedInput))
    }

    /// A raw client joined to a new server connection.
    func rawClient() async throws -> RawFrameClient {
        let (router, registry) = (self.router, self.registry)
        return try await RawFrameClient.inMemory(on: group.next()) { channel in
            ServerConnection(channel: channel, router: router, registry: registry)
        }
    }

    /// Bytes of unfinished frames the connections hold.
    var bufferedInputBytes: Int { registry.inputBudget.current }

    /// As `RPCServer.drain()`: GOAWAY on every connection; returns once they all closed.
    func drain() async {
        router.health.isDraining.store(true, ordering: .releasing)
        for connection in registry.all {
            connection.channel.loop.execute { connection.startDraining() }
        }
        await registry.waitUntilEmpty()
    }

    /// Stops the loop; its channels close, and the calls still running are cancelled.
    func stop() async {
        group.shutdown()
    }
}

/// Speaks frames directly over the transport, so tests can send what a well-behaved client never would.
final class RawFrameClient: ChannelHandler, @unchecked Sendable {
    // @unchecked: the handler callbacks run on the channel's loop; tests touch only `channel` (Sendable)
    // and the stream, whose continuation is Sendable.

    /// What the raw client observed.
    enum Event: Sendable {
        case frame(Frame)
        case closed
    }

    private var decoder = FrameDecoder()
    private let continuation: AsyncStream<Event>.Continuation
    let events: AsyncStream<Event>
    private(set) var channel: Channel?

    private init() {
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    static func connect(port: Int, tls: TLSContext, group: EventLoopGroup) async throws -> RawFrameClient {
        let client = RawFrameClient()
        client.channel = try await Connector.connect(to: "127.0.0.1", port: port, in: group, tls: tls, handler: client)
        return client
    }

    /// A client joined to the handler `makeHandler` builds, in memory (`InMemoryConnection`).
    static func inMemory(
        on loop: EventLoop, handler makeHandler: @escaping @Sendable (Channel) -> any ChannelHandler
    ) async throws -> RawFrameClient {
        let client = RawFrameClient()
        client.channel = try await InMemoryConnection.connect(on: loop, peer: client, handler: makeHandler)
        return client
    }

    /// Sends raw bytes and flushes them.
    func send(bytes: [UInt8]) {
        guard let channel else { return }
        channel.loop.execute {
            channel.write(bytes)
            channel.flush()
        }
    }

    func send(_ frame: Frame) { send(bytes: frame.encoded()) }

    /// Sends the version-1 client handshake.
    func sendHandshake(version: UInt32 = Frame.protocolVersion) {
        var handshake = RpcV1.Handshake()
        handshake.protocolVersion = version
        handshake.maxFrameSize = UInt32(Frame.defaultMaxFrameSize)
        send(Frame(type: .handshake, streamID: 0, body: handshake.protobufBytes()))
    }

    func sendRequest(streamID: UInt32, method: String, payload: [UInt8], timeoutMs: UInt32 = 0) {
        let request = RpcV1.Request(method: method, timeoutMs: timeoutMs, metadata: [:], payload: payload)
        send(Frame(type: .request, streamID: streamID, body: request.protobufBytes()))
    }

    func close() {
        guard let channel else { return }
        channel.loop.execute { channel.close() }
    }

    func channelActive(_ channel: Channel) {}

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        decoder.append(bytes)
        while let frame = try? decoder.nextFrame() { continuation.yield(.frame(frame)) }
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        continuation.yield(.closed)
        continuation.finish()
    }
}

extension AsyncStream<RawFrameClient.Event>.Iterator {
    /// The next frame that is not of a type in `skipping`; nil once the connection closed.
    mutating func nextFrame(skipping: Set<FrameType> = [.handshake]) async -> Frame? {
        while let event = await next() {
            switch event {
            case .frame(let frame) where skipping.contains(frame.type): continue
            case .frame(let frame): return frame
            case .closed: return nil
            }
        }
        return nil
    }

    /// Waits for the connection to close, ignoring frames.
    mutating func waitForClose() async {
        while let event = await next() {
            if case .closed = event { return }
        }
    }
}

extension Frame {
    var response: RpcV1.Response? { try? RpcV1.Response(protobufBytes: body) }
}

let echoMethod = "rave.echo.v1.Echo/Echo"
let echoAfterDelayMethod = "rave.echo.v1.Echo/EchoAfterDelay"

/// Calls EchoAfterDelay through a caller.
func echoAfterDelay(
    _ caller: any RPCCaller, delayMs: UInt32, payload: [UInt8] = [1], timeout: Duration = .seconds(10)
) async throws(RPCError) -> [UInt8] {
    let request = EchoV1.EchoAfterDelayRequest(payload: payload, delayMs: delayMs)
    return try await EchoV1.EchoClient(caller: caller).echoAfterDelay(request, options: CallOptions(timeout: timeout))
        .payload
}
