import Foundation
import Glibc
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport
import RaveWire
import Synchronization

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

/// The echo service the tests call; `echoAfterDelay` sleeps cancellably, as ravectl's does.
struct TestEchoService: EchoV1.EchoHandler {
    func echo(_ request: EchoV1.EchoRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        EchoV1.EchoResponse(payload: request.payload)
    }

    func echoAfterDelay(
        _ request: EchoV1.EchoAfterDelayRequest, context: RequestContext
    ) async throws -> EchoV1.EchoResponse {
        try await Task.sleep(for: .milliseconds(Int(request.delayMs)))
        return EchoV1.EchoResponse(payload: request.payload)
    }

    func fail(_ request: EchoV1.FailRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        throw RPCError(request.code, request.message)
    }
}

/// A running echo server with its own event loops and certificates, plus ways to reach it.
final class TestServer: Sendable {
    let certificates: TestCertificates
    let group: EventLoopGroup
    let server: RPCServer

    init(configuration: RPCServerConfiguration = RPCServerConfiguration(), mutualTLS: Bool = false) throws {
        certificates = try TestCertificates()
        group = try EventLoopGroup(loopCount: 2)
        var configuration = configuration
        configuration.requestLogLevel = .debug
        server = RPCServer(
            configuration: configuration, services: [TestEchoService()], access: .open,
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
