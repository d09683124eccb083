import RaveRPC
import RaveTelemetry

/// Where a service listens and which database it owns when nothing overrides it (DESIGN.md §10).
public struct ServiceDefaults: Hashable, Sendable {
    public var name: String
    public var port: Int
    public var adminPort: Int
    /// The service's own database; nil for processes without one (the gateway).
    public var database: String?

    /// The processes `make run` starts.
    public static let catalog: [ServiceDefaults] = [
        ServiceDefaults(name: "gateway", port: 7443, adminPort: 9400, database: nil),
        ServiceDefaults(name: "identity", port: 7501, adminPort: 9401, database: "rave_identity"),
        ServiceDefaults(name: "social", port: 7502, adminPort: 9402, database: "rave_social"),
        ServiceDefaults(name: "leaderboards", port: 7503, adminPort: 9403, database: "rave_leaderboards"),
        ServiceDefaults(name: "gifts", port: 7504, adminPort: 9404, database: "rave_gifts"),
        ServiceDefaults(name: "push", port: 7505, adminPort: 9405, database: "rave_push"),
        ServiceDefaults(name: "wallet", port: 7506, adminPort: 9406, database: "rave_wallet"),
    ]

    /// The catalog entry for `name`; other names (tests, tools) get free ports and no database unless
    /// `RAVE_DATABASE_URL` names one.
    public static func named(_ name: String) -> ServiceDefaults {
        catalog.first { $0.name == name } ?? ServiceDefaults(name: name, port: 0, adminPort: 0, database: nil)
    }
}

/// A service process's settings, from `RAVE_…` environment variables over the defaults of DESIGN.md §10.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_LISTEN | 127.0.0.1:<port> | protocol (TLS) address |
/// | RAVE_ADMIN_LISTEN | 127.0.0.1:<admin port> | admin HTTP address (metrics, health) |
/// | RAVE_DATABASE_URL | postgresql://postgres@127.0.0.1:55432/rave_<name> | PostgreSQL connection |
/// | RAVE_DB_POOL_SIZE | 16 | connections in the pool, 1…1000 |
/// | RAVE_CERT_DIR | .run/certs | where the default certificate paths point |
/// | RAVE_TLS_CERT, RAVE_TLS_KEY, RAVE_TLS_CA | <dir>/<name>.pem, <dir>/<name>-key.pem, <dir>/ca.pem | TLS files |
/// | RAVE_TLS_CLIENT_AUTH | true (false for the gateway) | require client certificates (mTLS) |
/// | RAVE_LOG_LEVEL | info | trace, debug, info, notice, warning, error, critical |
/// | RAVE_MAX_FRAME_SIZE | 4MiB | largest frame accepted, 1KiB…64MiB |
/// | RAVE_MAX_CONCURRENT_STREAMS | 1024 | in-flight requests per connection, 1…100000 |
/// | RAVE_EVENT_LOOPS | cores | event loop threads, 1…256 |
/// | RAVE_HANDLERS_ON_EVENT_LOOP | true | run handlers on the connection's loop (fast) or on Swift's pool (for CPU-heavy handlers) |
/// | RAVE_IDLE_TIMEOUT | 300s | idle connections are closed after this |
/// | RAVE_SHUTDOWN_GRACE | 30s | on SIGTERM, how long in-flight work may take before connections close |
/// | RAVE_HANDSHAKE_TIMEOUT | 10s | time from accept to the end of TLS, and again to the client's HANDSHAKE frame |
/// | RAVE_MAX_HANDSHAKES | 1024 | connections in their TLS handshake at once; more are closed at accept |
/// | RAVE_MAX_HANDSHAKES_PER_ADDRESS | 64 | the same, from one client IP address |
/// | RAVE_EARLY_MAX_FRAME_SIZE | 64KiB | largest frame before the connection's first successful call (no client certificate) |
/// | RAVE_MAX_BUFFERED_INPUT | 128MiB | bytes of unfinished frames all connections hold together; larger requests beyond it are refused |
/// | RAVE_STALLED_FRAME_TIMEOUT | 10s | a connection whose unfinished frame gets no byte for this long is closed |
/// | RAVE_ADMIN_MAX_CONNECTIONS | 64 | connections the admin HTTP port holds at once |
/// | RAVE_MEMORY_TRIM_INTERVAL | 10s | how often freed heap memory is handed back to the system (0s: never) |
public struct ServiceConfiguration: Sendable {
    public var serviceName: String
    public var listen: SocketAddress
    public var adminListen: SocketAddress
    /// The PostgreSQL connection string; nil for services without a database.
    public var databaseURL: String?
    public var databasePoolSize: Int
    public var tlsCertificatePath: String
    public var tlsPrivateKeyPath: String
    public var tlsCertificateAuthorityPath: String
    public var requireClientCertificate: Bool
    public var logLevel: Logger.Level
    public var maxFrameSize: Int
    public var maxConcurrentStreams: Int
    public var eventLoopCount: Int
    /// Whether RPC handlers run on their connection's event loop; identity's password hashing keeps it off there.
    public var handlersOnEventLoop: Bool
    public var idleTimeout: Duration
    public var shutdownGracePeriod: Duration
    public var handshakeTimeout: Duration
    public var maxHandshakes: Int
    public var maxHandshakesPerAddress: Int
    public var earlyMaxFrameSize: Int
    public var maxBufferedInput: Int
    public var stalledFrameTimeout: Duration
    public var adminMaxConnections: Int
    /// How often the memory trimmer runs (zero: never); see `MemoryTrimmer`.
    public var memoryTrimInterval: Duration
    /// Every setting with secrets masked, for the start-up log line; services' own settings are appended.
    public var effectiveSettings: [(String, String)]

    /// Reads the configuration of `serviceName` from `environment`.
    ///
    /// Throws `RuntimeError.invalidConfiguration` naming the first variable with a value it cannot use.
    public init(serviceName: String, environment: [String: String], coreCount: Int = 1) throws(RuntimeError) {
        let defaults = ServiceDefaults.named(serviceName)
        var reader = ConfigurationReader(environment: environment)
        self.serviceName = serviceName
        reader.record("service", serviceName)
        listen = try reader.address("RAVE_LISTEN", default: SocketAddress(host: "127.0.0.1", port: defaults.port))
        adminListen = try reader.address(
            "RAVE_ADMIN_LISTEN", default: SocketAddress(host: "127.0.0.1", port: defaults.adminPort))

        let defaultURL = defaults.database.map { "postgresql://postgres@127.0.0.1:55432/\($0)" }
        if let url = environment["RAVE_DATABASE_URL"] ?? defaultURL {
            guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") || url.contains("=") else {
                throw .invalidValue(
                    "RAVE_DATABASE_URL", url, allowed: "a postgresql:// URL or a libpq key=value connection string")
            }
            databaseURL = url
            reader.record("RAVE_DATABASE_URL", ConfigurationReader.maskedConnectionString(url))
            databasePoolSize = try reader.integer("RAVE_DB_POOL_SIZE", default: 16, range: 1...1000)
        } else {
            databaseURL = nil
            databasePoolSize = 0
        }

        let directory = try reader.string("RAVE_CERT_DIR", default: ".run/certs")
        tlsCertificatePath = try reader.string("RAVE_TLS_CERT", default: "\(directory)/\(serviceName).pem")
        tlsPrivateKeyPath = try reader.string("RAVE_TLS_KEY", default: "\(directory)/\(serviceName)-key.pem")
        tlsCertificateAuthorityPath = try reader.string("RAVE_TLS_CA", default: "\(directory)/ca.pem")
        requireClientCertificate = try reader.boolean("RAVE_TLS_CLIENT_AUTH", default: serviceName != "gateway")

        let levelName = try reader.choice(
            "RAVE_LOG_LEVEL", default: "info", choices: Logger.Level.allCases.map(\.name))
        logLevel = Logger.Level(name: levelName) ?? .info
        maxFrameSize = try reader.byteSize("RAVE_MAX_FRAME_SIZE", default: 4 << 20, range: 1024...(64 << 20))
        maxConcurrentStreams = try reader.integer("RAVE_MAX_CONCURRENT_STREAMS", default: 1024, range: 1...100_000)
        eventLoopCount = try reader.integer("RAVE_EVENT_LOOPS", default: max(1, coreCount), range: 1...256)
        handlersOnEventLoop = try reader.boolean("RAVE_HANDLERS_ON_EVENT_LOOP", default: true)
        idleTimeout = try reader.duration(
            "RAVE_IDLE_TIMEOUT", default: .seconds(300), range: .seconds(1)...Duration.seconds(86_400))
        shutdownGracePeriod = try reader.duration(
            "RAVE_SHUTDOWN_GRACE", default: .seconds(30), range: .zero...Duration.seconds(3600))
        handshakeTimeout = try reader.duration(
            "RAVE_HANDSHAKE_TIMEOUT", default: .seconds(10), range: .milliseconds(100)...Duration.seconds(300))
        maxHandshakes = try reader.integer("RAVE_MAX_HANDSHAKES", default: 1024, range: 1...1_000_000)
        maxHandshakesPerAddress = try reader.integer(
            "RAVE_MAX_HANDSHAKES_PER_ADDRESS", default: 64, range: 1...1_000_000)
        earlyMaxFrameSize = try reader.byteSize(
            "RAVE_EARLY_MAX_FRAME_SIZE", default: 64 << 10, range: 1024...(64 << 20))
        maxBufferedInput = try reader.byteSize(
            "RAVE_MAX_BUFFERED_INPUT", default: 128 << 20, range: (1 << 20)...(64 << 30))
        stalledFrameTimeout = try reader.duration(
            "RAVE_STALLED_FRAME_TIMEOUT", default: .seconds(10), range: .milliseconds(100)...Duration.seconds(3600))
        adminMaxConnections = try reader.integer("RAVE_ADMIN_MAX_CONNECTIONS", default: 64, range: 1...100_000)
        memoryTrimInterval = try reader.duration(
            "RAVE_MEMORY_TRIM_INTERVAL", default: .seconds(10), range: .zero...Duration.seconds(3600))
        effectiveSettings = reader.effectiveSettings
    }

    /// The RPC server's settings from these (the caller adds what only it knows: the fallback's methods, a
    /// per-address connection limit).
    public var rpcServerConfiguration: RPCServerConfiguration {
        var configuration = RPCServerConfiguration(
            host: listen.host, port: listen.port, maxFrameSize: maxFrameSize,
            maxConcurrentStreams: maxConcurrentStreams, idleTimeout: idleTimeout,
            drainGracePeriod: shutdownGracePeriod)
        configuration.runsHandlersOnEventLoop = handlersOnEventLoop
        configuration.handshakeTimeout = handshakeTimeout
        configuration.maxHandshakes = maxHandshakes
        configuration.maxHandshakesPerAddress = maxHandshakesPerAddress
        configuration.earlyMaxFrameSize = earlyMaxFrameSize
        configuration.maxBufferedInput = maxBufferedInput
        configuration.stalledFrameTimeout = stalledFrameTimeout
        return configuration
    }
}
