import RaveTelemetry
import RaveTransport
import RaveWire

/// Limits and timeouts of an `RPCServer`; every field has a default that suits a local run.
public struct RPCServerConfiguration: Sendable {
    /// Address to listen on.
    public var host: String
    /// Port to listen on; 0 picks a free one (see `RPCServer.localPort`).
    public var port: Int
    /// Largest frame accepted, header included (default 4 MiB).
    public var maxFrameSize: Int
    /// Calls run at once per connection; more get RESOURCE_EXHAUSTED + not_processed (default 4096).
    public var maxConcurrentStreams: Int
    /// Deadline for requests that send timeout_ms = 0 (default 30 s).
    public var defaultTimeout: Duration
    /// Longest deadline honoured; larger timeouts are cut to it (default 5 minutes).
    public var maxTimeout: Duration
    /// A connection with no call in flight and no frame read for this long is closed (default 5 minutes).
    public var idleTimeout: Duration
    /// How long `drain()` lets in-flight calls finish before closing their connections (default 30 s).
    public var drainGracePeriod: Duration
    /// Level of the one log line written per completed call (default info; the benchmark lowers it).
    public var requestLogLevel: Logger.Level
    /// Free text sent in the handshake.
    public var agent: String
    /// Whether handlers run on the connection's event loop thread (default true) or on Swift's global pool.
    ///
    /// On the loop a call costs no thread hand-offs, which roughly doubles throughput for
    /// short handlers; a handler that computes for long (password hashing, large sorts) then delays every
    /// connection of its loop, so a service with such handlers sets this to false.
    public var runsHandlersOnEventLoop: Bool = true
    /// Buffered output per connection above which the connection stops reading requests (default 1 MiB).
    public var writeHighWaterMark: Int
    /// Buffered output at which reading resumes (default 256 KiB).
    public var writeLowWaterMark: Int
    /// Connections one client IP address may hold open, counted from `accept` (the TLS handshake included) until
    /// close; more are closed right after `accept` (default 0: no limit; the gateway sets one).
    public var maxConnectionsPerAddress: Int = 0
    /// Connections in their TLS handshake at once, from all addresses; more are closed right after `accept`
    /// (default 1024).
    public var maxHandshakes: Int = 1024
    /// Connections in their TLS handshake at once from one IP address; more are closed right after `accept`
    /// (default 64), so one address cannot take every handshake slot.
    public var maxHandshakesPerAddress: Int = 64
    /// Time allowed from `accept` to the end of the TLS handshake, and again from then until the client's
    /// HANDSHAKE frame has arrived (default 10 s each).
    public var handshakeTimeout: Duration = .seconds(10)
    /// Largest frame a connection may send before it has proven itself (default 64 KiB).
    ///
    /// A connection proves itself when one of its calls other than Health/Check is answered OK, or from the start
    /// when its peer presented a client certificate. A longer REQUEST is answered RESOURCE_EXHAUSTED +
    /// not_processed and its body skipped without being buffered.
    public var earlyMaxFrameSize: Int = 64 << 10
    /// Bytes of unfinished frames all connections of the server may hold together (default 128 MiB).
    ///
    /// A REQUEST longer than `earlyMaxFrameSize` whose whole size does not fit is answered RESOURCE_EXHAUSTED +
    /// not_processed and skipped; smaller frames are always read (each connection holds at most one).
    public var maxBufferedInput: Int = 128 << 20
    /// A connection that holds part of a frame and receives no byte of it for this long is closed with ERROR
    /// (default 10 s; time the server itself stops reading, under back pressure, does not count).
    public var stalledFrameTimeout: Duration = .seconds(10)
    /// Methods the fallback serves (the gateway's routable methods).
    ///
    /// Metrics and logs name a method only when it is served or listed here; every other name a client sends is
    /// counted under `unknownMethodLabel`.
    public var fallbackMethodNames: Set<String> = []

    /// The metric label of every method the server neither serves nor lists in `fallbackMethodNames`.
    public static let unknownMethodLabel = "unknown"
    /// Methods peers call on a timer (health checks, a gateway's revocation feed), logged only when they fail.
    ///
    /// An OK answer to one is logged at debug instead of `requestLogLevel`, so polls every 250 ms do not fill the
    /// log; a failure is logged as any call's. Default: the Health check.
    public var quietMethods: Set<String> = [HealthCheck.methodName]

    public init(
        host: String = "127.0.0.1", port: Int = 0, maxFrameSize: Int = Frame.defaultMaxFrameSize,
        maxConcurrentStreams: Int = 4096, defaultTimeout: Duration = .seconds(30),
        maxTimeout: Duration = .seconds(300), idleTimeout: Duration = .seconds(300),
        drainGracePeriod: Duration = .seconds(30), requestLogLevel: Logger.Level = .info,
        agent: String = "rave-backend/1", writeHighWaterMark: Int = 1 << 20, writeLowWaterMark: Int = 256 << 10
    ) {
        self.host = host
        self.port = port
        self.maxFrameSize = maxFrameSize
        self.maxConcurrentStreams = maxConcurrentStreams
        self.defaultTimeout = defaultTimeout
        self.maxTimeout = maxTimeout
        self.idleTimeout = idleTimeout
        self.drainGracePeriod = drainGracePeriod
        self.requestLogLevel = requestLogLevel
        self.agent = agent
        self.writeHighWaterMark = writeHighWaterMark
        self.writeLowWaterMark = writeLowWaterMark
    }

    /// The options of the server's channels (write water marks, handshake timeout).
    public var channelOptions: ChannelOptions {
        var options = ChannelOptions()
        options.highWaterMark = writeHighWaterMark
        options.lowWaterMark = writeLowWaterMark
        options.handshakeTimeout = handshakeTimeout.nanoseconds
        return options
    }

    /// The limits the server's listener counts connections under.
    public var connectionLimits: ConnectionLimits {
        ConnectionLimits(
            maxPerAddress: maxConnectionsPerAddress, maxHandshakes: maxHandshakes,
            maxHandshakesPerAddress: maxHandshakesPerAddress)
    }
}

/// Hooks for metrics; the runtime implements it, every method defaults to doing nothing.
///
/// Methods are called on event loop threads and must return quickly. `method` is always from a closed set: a
/// method the server serves, one of `RPCServerConfiguration.fallbackMethodNames`, or
/// `RPCServerConfiguration.unknownMethodLabel` — never a name only the client chose.
public protocol RPCServerObserver: Sendable {
    /// A call arrived (started or about to be rejected); exactly one `callFinished` follows.
    func callStarted(method: String)
    /// A call finished (or was rejected) with `code` after `nanoseconds`.
    func callFinished(method: String, code: StatusCode, nanoseconds: UInt64)
    /// The number of open connections changed.
    func connectionCountChanged(to count: Int)
}

extension RPCServerObserver {
    public func callStarted(method: String) {}
    public func callFinished(method: String, code: StatusCode, nanoseconds: UInt64) {}
    public func connectionCountChanged(to count: Int) {}
}

/// The observer used when none is given.
public struct SilentServerObserver: RPCServerObserver {
    public init() {}
}

extension Duration {
    /// Whole nanoseconds, saturating at zero for negative durations.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
