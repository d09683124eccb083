import RaveHTTP
import RaveTelemetry
import RaveTransport
import Synchronization

/// The admin HTTP/1.1 server: `/metrics` (Prometheus text), `/healthz` (liveness) and `/readyz` (readiness).
///
/// Plain TCP on the admin port, meant for a local scraper and the orchestrator's probes. It answers GET and HEAD
/// only, takes no request bodies, closes connections that send malformed or oversized heads (RaveHTTP's parser,
/// with the limits `requestLimits`), and holds at most `maxConnections` connections. `/metrics` is rendered on
/// Swift's global pool, never on an event loop, so a scrape cannot delay the RPC connections that share the loops.
public final class AdminHTTPServer: Service {
    public let name = "admin-http"
    private let address: SocketAddress
    private let group: EventLoopGroup
    private let router: AdminRouter
    private let logger: Logger
    private let server = Mutex<HTTPServer?>(nil)
    private let stopped = ShutdownLatch()
    private let limits: ConnectionLimits

    /// Connections the admin port holds at once by default: a scraper and a few probes need a handful.
    public static let defaultMaxConnections = 64
    /// Connections one IP address may hold on the admin port, so one client cannot take every slot.
    public static let maxConnectionsPerAddress = 16
    /// What an admin request may be: a head of at most 8 KiB and 64 fields, no body; `Host` may be missing (probes
    /// are written by hand).
    static let requestLimits = HTTPLimits(maxHeadBytes: 8192, maxHeaderCount: 64, maxBodyBytes: 0, requiresHost: false)
    /// Connections idle this long are closed, so forgotten keep-alive clients don't hold descriptors.
    static let idleTimeout = Duration.seconds(30)

    /// - Parameters:
    ///   - isShuttingDown: when it returns true, `/readyz` answers 503 so load balancers stop sending traffic.
    public init(
        address: SocketAddress, group: EventLoopGroup, metrics: MetricsRegistry = .shared,
        readiness: ReadinessChecks, isShuttingDown: @escaping @Sendable () -> Bool = { false }, logger: Logger,
        maxConnections: Int = AdminHTTPServer.defaultMaxConnections
    ) {
        self.limits = ConnectionLimits(maxPerAddress: Self.maxConnectionsPerAddress, maxTotal: maxConnections)
        self.address = address
        self.group = group
        self.router = AdminRouter(metrics: metrics, readiness: readiness, isShuttingDown: isShuttingDown)
        self.logger = logger
    }

    /// Binds the admin port now (instead of in `run()`), so a port conflict stops start-up early.
    ///
    /// Returns the bound port, which differs from the configured one when that is 0.
    @discardableResult
    public func bind() throws(RuntimeError) -> Int {
        let router = self.router
        let logger = self.logger
        return try server.withLock { server throws(RuntimeError) -> Int in
            if let server { return server.localPort }
            do {
                let bound = try HTTPServer(
                    group: group, host: address.host, port: address.port, tls: nil,
                    admission: ConnectionAdmission(limits: limits),
                    settings: HTTPServerSettings(limits: Self.requestLimits, idleTimeout: Self.idleTimeout),
                    responder: AdminResponder(router: router, logger: logger))
                server = bound
                logger.info("admin server listening", [("address", "\(address.host):\(bound.localPort)")])
                return bound.localPort
            } catch {
                throw RuntimeError(.startupFailed, "cannot listen on admin address \(address): \(error)")
            }
        }
    }

    /// The bound port, once `bind()` or `run()` has bound it.
    public var localPort: Int? { server.withLock { $0?.localPort } }

    public func run() async throws {
        try bind()
        await stopped.wait()
        server.withLock { server in
            server?.close()
            server = nil
        }
    }

    public func shutdown() async {
        stopped.open()
    }

    /// Closes the port at once, for a start-up that failed before `run()`.
    public func closeNow() {
        server.withLock { server in
            server?.close()
            server = nil
        }
    }
}

/// Answers admin requests; shared by every connection.
struct AdminRouter: Sendable {
    let metrics: MetricsRegistry
    let readiness: ReadinessChecks
    let isShuttingDown: @Sendable () -> Bool

    /// The response to `request`: immediate for cheap endpoints, deferred (produced on Swift's global pool) for
    /// `/readyz`, which awaits its checks, and `/metrics`, whose rendering is not for an event loop.
    func answer(_ request: HTTPServerRequest) -> HTTPAnswer {
        guard request.method == "GET" || request.method == "HEAD" else {
            return .immediate(
                Self.text(
                    .methodNotAllowed, "only GET and HEAD are allowed\n",
                    headers: [HTTPHeader(name: "Allow", value: "GET, HEAD")]))
        }
        switch request.path {
        case "/healthz":
            return .immediate(Self.text(.ok, "ok\n"))
        case "/metrics":
            // Rendered off the event loop: the loop that parsed the request also serves RPC connections.
            let metrics = self.metrics
            return .deferred {
                Self.text(.ok, metrics.exposition(), contentType: MetricsRegistry.contentType)
            }
        case "/readyz":
            if isShuttingDown() {
                return .immediate(Self.text(.serviceUnavailable, "shutting down\n"))
            }
            let readiness = self.readiness
            // Bounded: each readiness check gives up after its timeout.
            return .deferred {
                let report = await readiness.evaluate()
                return Self.text(report.isReady ? .ok : .serviceUnavailable, report.text)
            }
        default:
            return .immediate(Self.text(.notFound, "no such endpoint; try /metrics, /healthz or /readyz\n"))
        }
    }

    /// A plain-text admin response, never cached.
    static func text(
        _ status: HTTPStatus, _ body: String, contentType: String = "text/plain; charset=utf-8",
        headers: [HTTPHeader] = []
    ) -> HTTPServerResponse {
        HTTPServerResponse(
            status: status, contentType: contentType, text: body,
            headers: [HTTPHeader(name: "Cache-Control", value: "no-store")] + headers)
    }
}

/// The admin port's `HTTPResponder`: the router's answers, and plain-text refusals of unreadable requests.
struct AdminResponder: HTTPResponder {
    let router: AdminRouter
    let logger: Logger

    func answer(_ request: HTTPServerRequest, from connection: HTTPConnectionInfo) -> HTTPAnswer {
        router.answer(request)
    }

    func answer(_ error: HTTPParseError, from connection: HTTPConnectionInfo) -> HTTPServerResponse {
        logger.debug("bad admin request", [("peer", connection.remoteAddress), ("reason", error.reason)])
        return AdminRouter.text(error.status, error.reason + "\n")
    }
}
