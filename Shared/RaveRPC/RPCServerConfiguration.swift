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
    /// Connections one client IP address may hold open; more are refused with RESOURCE_EXHAUSTED right after
    /// the TLS handshake (default 0: no limit; the gateway sets one).
    public var maxConnectionsPerAddress: Int = 0

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

    var channelOptions: ChannelOptions {
        var options = ChannelOptions()
        options.highWaterMark = writeHighWaterMark
        options.lowWaterMark = writeLowWaterMark
        return options
    }
}

/// Hooks for metrics; the runtime implements it, every method defaults to doing nothing.
///
/// Methods are called on event loop threads and must return quickly.
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
