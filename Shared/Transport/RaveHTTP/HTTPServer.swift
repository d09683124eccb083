import RaveTransport
import Synchronization

/// What a connection knows about its peer, for the responder.
public struct HTTPConnectionInfo: Sendable {
    /// The peer as "ip:port".
    public var remoteAddress: String
    /// The peer's verified client certificate (TLS only, when the server requests one and the peer sent one).
    public var peerCertificate: PeerCertificate?

    public init(remoteAddress: String, peerCertificate: PeerCertificate? = nil) {
        self.remoteAddress = remoteAddress
        self.peerCertificate = peerCertificate
    }
}

/// How a responder answers one request.
public enum HTTPAnswer: Sendable {
    /// Answered on the event loop at once.
    case immediate(HTTPServerResponse)
    /// Produced by a task off the event loop; the connection answers later requests only after this one.
    case deferred(@Sendable () async -> HTTPServerResponse)
    /// Produced on the event loop without a task: `start` runs at once on the connection's loop and calls the
    /// `respond` it is given exactly once, on that loop, now or later; it returns what cancels the answer (the
    /// client went away). It returns nil when it cannot answer this request that way, without having responded:
    /// the request is then answered by `otherwise`, as a deferred answer.
    case onLoop(start: HTTPLoopStart, otherwise: @Sendable () async -> HTTPServerResponse)
}

/// Starts an answer on the event loop (`HTTPAnswer.onLoop`): the loop, and what to call with the response.
public typealias HTTPLoopStart = @Sendable (EventLoop, @escaping (HTTPServerResponse) -> Void) -> (() -> Void)?

/// Decides what an `HTTPServer` answers; called on the connection's event loop, so it must not block.
public protocol HTTPResponder: Sendable {
    /// The answer to a complete request.
    func answer(_ request: HTTPServerRequest, from connection: HTTPConnectionInfo) -> HTTPAnswer
    /// The response to a request that could not be parsed or stopped arriving (`408`); the connection closes after
    /// it.
    func answer(_ error: HTTPParseError, from connection: HTTPConnectionInfo) -> HTTPServerResponse
}

/// How an `HTTPServer`'s connections read and wait.
public struct HTTPServerSettings: Sendable {
    /// What one request may hold.
    public var limits: HTTPLimits
    /// A request whose head or body gets no byte for this long is answered 408 and its connection closed.
    public var stalledRequestTimeout: Duration
    /// A keep-alive connection with nothing to do for this long is closed.
    public var idleTimeout: Duration
    /// Input buffered while a request is being answered (pipelined requests) beyond which the connection stops
    /// reading until it caught up.
    public var maxBufferedInput: Int
    /// HTTP/2 streams one connection may have open at once (a connection speaks HTTP/2 when its TLS context offers
    /// `h2` in ALPN and the client chose it).
    public var maxConcurrentStreams: Int

    public init(
        limits: HTTPLimits, stalledRequestTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(300),
        maxConcurrentStreams: Int = 100
    ) {
        self.limits = limits
        self.stalledRequestTimeout = stalledRequestTimeout
        self.idleTimeout = idleTimeout
        self.maxBufferedInput = max(64 << 10, limits.maxHeadBytes + limits.maxBodyBytes)
        self.maxConcurrentStreams = maxConcurrentStreams
    }
}

/// An HTTP server on one port (TLS or plain TCP): HTTP/1.1 requests parsed by `HTTPRequestParser` and answered in
/// order, with keep-alive, pipelining, a stalled-request and an idle timeout; HTTP/2 (when ALPN chose `h2`) on
/// libnghttp2 with concurrent streams; one `HTTPResponder` for both, and a graceful drain.
public final class HTTPServer: Sendable {
    private let listener: Mutex<Listener?>
    private let connections: HTTPConnectionRegistry
    /// The bound port (differs from the requested one when that is 0).
    public let localPort: Int

    /// Binds host:port and starts serving; connections are counted in `admission` (which other listeners may
    /// share) and spread over the group's loops.
    public init(
        group: EventLoopGroup, host: String, port: Int, tls: TLSContext?, options: ChannelOptions = ChannelOptions(),
        admission: ConnectionAdmission, settings: HTTPServerSettings, responder: any HTTPResponder
    ) throws(TransportError) {
        let connections = HTTPConnectionRegistry()
        let listener = try Listener(
            group: group, host: host, port: port, tls: tls, options: options, admission: admission
        ) { channel in
            channel.setHandler(HTTPProtocolSelector(settings: settings, responder: responder, registry: connections))
        }
        self.connections = connections
        self.listener = Mutex(listener)
        localPort = listener.localPort
    }

    /// Connections open now.
    public var openConnections: Int { connections.count }

    /// Stops accepting; established connections are not affected.
    public func close() {
        listener.withLock { listener in
            listener?.close()
            listener = nil
        }
    }

    /// Stops accepting, closes idle connections, lets each busy one finish its request (answered with
    /// `Connection: close`), and returns once every connection closed; after `gracePeriod` the rest are cut off.
    public func drain(gracePeriod: Duration) async {
        close()
        for connection in connections.startDraining() {
            connection.channel.loop.execute { connection.startDraining() }
        }
        let connections = self.connections
        let deadline = Task {
            try await Task.sleep(for: gracePeriod)
            for connection in connections.all {
                connection.channel.loop.execute { connection.channel.closeNow() }
            }
        }
        await connections.waitUntilEmpty()
        deadline.cancel()
    }
}

/// An open connection of either version, as a drain sees it.
protocol HTTPConnectionHandle: AnyObject, Sendable {
    var channel: Channel { get }
    /// Closes the connection once it is idle (HTTP/1.1) or its streams are done (HTTP/2, after GOAWAY).
    func startDraining()
}

/// Gives a new connection the handler of the protocol ALPN chose (`h2`: HTTP/2; anything else: HTTP/1.1) once its
/// TLS handshake is done, and passes every callback on to it.
final class HTTPProtocolSelector: ChannelHandler, @unchecked Sendable {
    // @unchecked: `selected` is set and used only on the channel's loop.

    private let settings: HTTPServerSettings
    private let responder: any HTTPResponder
    private let registry: HTTPConnectionRegistry
    private var selected: (any ChannelHandler)?

    init(settings: HTTPServerSettings, responder: any HTTPResponder, registry: HTTPConnectionRegistry) {
        self.settings = settings
        self.responder = responder
        self.registry = registry
    }

    func channelActive(_ channel: Channel) {
        let handler: any ChannelHandler =
            channel.negotiatedApplicationProtocol == "h2"
            ? HTTP2ServerConnection(channel: channel, settings: settings, responder: responder, registry: registry)
            : HTTPServerConnection(channel: channel, settings: settings, responder: responder, registry: registry)
        selected = handler
        handler.channelActive(channel)
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        selected?.channelRead(channel, bytes)
    }

    func channelReadComplete(_ channel: Channel) {
        selected?.channelReadComplete(channel)
    }

    func channelWritabilityChanged(_ channel: Channel) {
        selected?.channelWritabilityChanged(channel)
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        selected?.channelInactive(channel, error: error)
        selected = nil
    }
}

/// The open connections of one server, so a drain can reach them and wait for them.
final class HTTPConnectionRegistry: Sendable {
    private struct State {
        var open: [ObjectIdentifier: any HTTPConnectionHandle] = [:]
        var waiters: [CheckedContinuation<Void, Never>] = []
        var draining = false
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.open.count } }
    var all: [any HTTPConnectionHandle] { state.withLock { Array($0.open.values) } }

    /// Adds a connection that became active; returns true when the server is draining (it should close soon).
    func add(_ connection: any HTTPConnectionHandle) -> Bool {
        state.withLock { state in
            state.open[ObjectIdentifier(connection)] = connection
            return state.draining
        }
    }

    /// Marks the server as draining and returns the connections open now.
    func startDraining() -> [any HTTPConnectionHandle] {
        state.withLock { state in
            state.draining = true
            return Array(state.open.values)
        }
    }

    func remove(_ connection: any HTTPConnectionHandle) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open[ObjectIdentifier(connection)] = nil
            guard state.open.isEmpty else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func waitUntilEmpty() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let empty = state.withLock { state -> Bool in
                if state.open.isEmpty { return true }
                state.waiters.append(continuation)
                return false
            }
            if empty { continuation.resume() }
        }
    }
}
