import RaveTelemetry
import RaveTransport
import Synchronization

/// The admin HTTP/1.1 server: `/metrics` (Prometheus text), `/healthz` (liveness) and `/readyz` (readiness).
///
/// Plain TCP on the admin port, meant for a local scraper and the orchestrator's probes. It answers GET and HEAD
/// only, takes no request bodies, closes connections that send malformed or oversized heads, and holds at most
/// `maxConnections` connections. `/metrics` is rendered on Swift's global pool, never on an event loop, so a
/// scrape cannot delay the RPC connections that share the loops.
public final class AdminHTTPServer: Service {
    public let name = "admin-http"
    private let address: SocketAddress
    private let group: EventLoopGroup
    private let router: AdminRouter
    private let logger: Logger
    private let listener = Mutex<Listener?>(nil)
    private let stopped = ShutdownLatch()
    private let limits: ConnectionLimits

    /// Connections the admin port holds at once by default: a scraper and a few probes need a handful.
    public static let defaultMaxConnections = 64
    /// Connections one IP address may hold on the admin port, so one client cannot take every slot.
    public static let maxConnectionsPerAddress = 16

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
        return try listener.withLock { listener throws(RuntimeError) -> Int in
            if let listener { return listener.localPort }
            do {
                let bound = try Listener(
                    group: group, host: address.host, port: address.port, tls: nil, limits: limits
                ) { channel in
                    channel.setHandler(AdminHTTPConnection(router: router, logger: logger))
                }
                listener = bound
                logger.info("admin server listening", [("address", "\(address.host):\(bound.localPort)")])
                return bound.localPort
            } catch {
                throw RuntimeError(.startupFailed, "cannot listen on admin address \(address): \(error)")
            }
        }
    }

    /// The bound port, once `bind()` or `run()` has bound it.
    public var localPort: Int? { listener.withLock { $0?.localPort } }

    public func run() async throws {
        try bind()
        await stopped.wait()
        listener.withLock { listener in
            listener?.close()
            listener = nil
        }
    }

    public func shutdown() async {
        stopped.open()
    }

    /// Closes the port at once, for a start-up that failed before `run()`.
    public func closeNow() {
        listener.withLock { listener in
            listener?.close()
            listener = nil
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
    enum Answer {
        case immediate(HTTPResponse)
        case deferred(@Sendable () async -> HTTPResponse)
    }

    func answer(_ request: HTTPRequest) -> Answer {
        guard request.method == "GET" || request.method == "HEAD" else {
            var response = HTTPResponse(status: .methodNotAllowed, body: "only GET and HEAD are allowed\n")
            response.extraHeaders.append(HTTPHeader(name: "Allow", value: "GET, HEAD"))
            return .immediate(response)
        }
        switch request.path {
        case "/healthz":
            return .immediate(HTTPResponse(status: .ok, body: "ok\n"))
        case "/metrics":
            // Rendered off the event loop: the loop that parsed the request also serves RPC connections.
            let metrics = self.metrics
            return .deferred {
                HTTPResponse(status: .ok, contentType: MetricsRegistry.contentType, body: metrics.exposition())
            }
        case "/readyz":
            if isShuttingDown() {
                return .immediate(HTTPResponse(status: .serviceUnavailable, body: "shutting down\n"))
            }
            let readiness = self.readiness
            return .deferred {
                let report = await readiness.evaluate()
                return HTTPResponse(status: report.isReady ? .ok : .serviceUnavailable, body: report.text)
            }
        default:
            return .immediate(
                HTTPResponse(status: .notFound, body: "no such endpoint; try /metrics, /healthz or /readyz\n"))
        }
    }
}

/// One admin connection: parses requests and answers them one at a time, in order.
final class AdminHTTPConnection: ChannelHandler, @unchecked Sendable {
    // @unchecked: every property is used only on the channel's loop; deferred answers hop back with `execute`.

    private let router: AdminRouter
    private let logger: Logger
    private var parser = HTTPRequestParser()
    private var answering = false
    private var closed = false
    private var idleTimer: TimerHandle?

    /// Connections idle this long are closed, so forgotten keep-alive clients don't hold descriptors.
    private static let idleTimeout: UInt64 = 30_000_000_000

    init(router: AdminRouter, logger: Logger) {
        self.router = router
        self.logger = logger
    }

    func channelActive(_ channel: Channel) {
        armIdleTimer(channel)
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        parser.append(bytes)
        answerNext(channel)
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        closed = true
        if let idleTimer { channel.loop.cancelTimer(idleTimer) }
        idleTimer = nil
    }

    private func answerNext(_ channel: Channel) {
        guard !answering, !closed else { return }
        let request: HTTPRequest
        do {
            guard let next = try parser.nextRequest() else { return }
            request = next
        } catch {
            logger.debug("bad admin request", [("peer", channel.remoteAddress), ("reason", error.reason)])
            send(HTTPResponse(status: error.status, body: error.reason + "\n"), to: channel, keepAlive: false)
            return
        }
        armIdleTimer(channel)
        switch router.answer(request) {
        case .immediate(let response):
            send(response, for: request, to: channel)
        case .deferred(let produce):
            answering = true
            // Bounded: a deferred answer is the readiness report, whose checks each give up after their timeout.
            Task.detached {
                let response = await produce()
                channel.loop.execute { [self] in
                    answering = false
                    send(response, for: request, to: channel)
                }
            }
        }
    }

    private func send(_ response: HTTPResponse, for request: HTTPRequest, to channel: Channel) {
        send(response, to: channel, keepAlive: request.keepAlive, includeBody: request.method != "HEAD")
    }

    private func send(_ response: HTTPResponse, to channel: Channel, keepAlive: Bool, includeBody: Bool = true) {
        guard !closed else { return }
        channel.write(response.serialized(keepAlive: keepAlive, includeBody: includeBody))
        channel.flush()
        if keepAlive {
            answerNext(channel)
        } else {
            closed = true
            channel.close()
        }
    }

    private func armIdleTimer(_ channel: Channel) {
        if let idleTimer { channel.loop.cancelTimer(idleTimer) }
        idleTimer = channel.loop.scheduleTimer(after: Self.idleTimeout) { [weak self, weak channel] in
            guard let self, let channel, !self.closed else { return }
            self.closed = true
            channel.close()
        }
    }
}
