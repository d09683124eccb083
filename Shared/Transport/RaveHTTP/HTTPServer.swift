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
}

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

    public init(
        limits: HTTPLimits, stalledRequestTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(300)
    ) {
        self.limits = limits
        self.stalledRequestTimeout = stalledRequestTimeout
        self.idleTimeout = idleTimeout
        self.maxBufferedInput = max(64 << 10, limits.maxHeadBytes + limits.maxBodyBytes)
    }
}

/// An HTTP/1.1 server on one port (TLS or plain TCP): requests parsed by `HTTPRequestParser`, answered in order by
/// an `HTTPResponder`, with keep-alive, pipelining, a stalled-request and an idle timeout, and a graceful drain.
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
            channel.setHandler(
                HTTPServerConnection(
                    channel: channel, settings: settings, responder: responder, registry: connections))
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

/// The open connections of one server, so a drain can reach them and wait for them.
final class HTTPConnectionRegistry: Sendable {
    private struct State {
        var open: [ObjectIdentifier: HTTPServerConnection] = [:]
        var waiters: [CheckedContinuation<Void, Never>] = []
        var draining = false
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.open.count } }
    var all: [HTTPServerConnection] { state.withLock { Array($0.open.values) } }

    /// Adds a connection that became active; returns true when the server is draining (it should close soon).
    func add(_ connection: HTTPServerConnection) -> Bool {
        state.withLock { state in
            state.open[ObjectIdentifier(connection)] = connection
            return state.draining
        }
    }

    /// Marks the server as draining and returns the connections open now.
    func startDraining() -> [HTTPServerConnection] {
        state.withLock { state in
            state.draining = true
            return Array(state.open.values)
        }
    }

    func remove(_ connection: HTTPServerConnection) {
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
