import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport

/// The gateway process, assembled: event loops, the client-facing TLS server (client certificates requested,
/// not required), mTLS connections to every service, identity's signing keys, the admin HTTP server, and the
/// service group that runs and stops them.
///
/// Built like `ServiceRuntime`, but without a database and with an RPC server whose fallback routes every
/// method it does not serve itself. `GatewayMain` adds signals; tests drive it with `triggerShutdown()`.
final class GatewayRuntime: Sendable {
    let configuration: ServiceConfiguration
    let gateway: GatewayConfiguration
    let logger: Logger
    let pipeline: CallPipeline
    let signingKeys: SigningKeyStore
    /// Sessions identity has ended, whose tokens are refused.
    let revocations: RevocationFeed
    /// What `/readyz` reports (signing keys fetched, a healthy backend per service, not shutting down).
    let readiness: ReadinessChecks
    private let group: EventLoopGroup
    private let serverTLS: TLSContext
    private let rpc: RPCServerService
    private let admin: AdminHTTPServer
    private let serviceGroup: ServiceGroup

    /// Reads the configuration and binds both ports; serving begins at once, `run()` then waits for shutdown.
    static func start(environment: [String: String]) async throws -> GatewayRuntime {
        let configuration = try ServiceConfiguration(
            serviceName: "gateway", environment: environment, coreCount: System.coreCount)
        let gateway = try GatewayConfiguration(environment: environment, service: configuration)
        let logger = Logger(label: "gateway", level: configuration.logLevel)
        logger.info("starting", configuration.effectiveSettings + gateway.effectiveSettings)
        MemoryTrimmer.configureAllocator()
        let group = try EventLoopGroup(loopCount: configuration.eventLoopCount)
        do {
            return try GatewayRuntime(configuration: configuration, gateway: gateway, logger: logger, group: group)
        } catch {
            group.shutdown()
            throw error
        }
    }

    private init(
        configuration: ServiceConfiguration, gateway: GatewayConfiguration, logger: Logger, group: EventLoopGroup
    ) throws {
        self.configuration = configuration
        self.gateway = gateway
        self.logger = logger
        self.group = group
        let metrics = MetricsRegistry.shared
        let readiness = ReadinessChecks()
        self.readiness = readiness
        let admin = AdminHTTPServer(
            address: configuration.adminListen, group: group, metrics: metrics, readiness: readiness,
            logger: logger.with("component", "admin"), maxConnections: configuration.adminMaxConnections)
        try admin.bind()
        self.admin = admin

        do {
            var serverConfiguration = TLSConfiguration.server(
                certificateChainPath: configuration.tlsCertificatePath, privateKeyPath: configuration.tlsPrivateKeyPath,
                trustRootsPath: configuration.tlsCertificateAuthorityPath,
                requireClientCertificate: configuration.requireClientCertificate)
            serverConfiguration.requestClientCertificate = true
            let serverTLS = try TLSContext(serverConfiguration)
            let backendTLS = try TLSContext(
                .client(
                    trustRootsPath: gateway.certificateAuthorityPath,
                    certificateChainPath: gateway.backendCertificatePath,
                    privateKeyPath: gateway.backendPrivateKeyPath))
            let directory = BackendDirectory(
                backends: gateway.backends, tls: backendTLS, group: group,
                connectionsPerBackend: gateway.backendConnections, healthCheckInterval: gateway.healthCheckInterval,
                logger: logger.with("component", "backends"))
            guard let identityPool = directory.pools["identity"] else {
                throw RuntimeError.invalidValue(
                    "RAVE_GATEWAY_IDENTITY_ADDRESSES", "", allowed: "at least one identity address")
            }
            let identity = ServiceCaller(pool: identityPool)
            let signingKeys = SigningKeyStore(
                identity: identity, interval: gateway.keyRefreshInterval, minimumGap: gateway.keyRefreshMinimumGap,
                logger: logger.with("component", "signing-keys"))
            readiness.add("backends") {
                let missing = directory.servicesWithoutHealthyBackend
                return missing.isEmpty ? nil : "no healthy backend yet for " + missing.joined(separator: ", ")
            }
            readiness.add("signing-keys") { signingKeys.verifier == nil ? "not fetched from identity yet" : nil }
            let revocations = RevocationFeed(
                identity: identity, interval: gateway.revocationPollInterval,
                maximumStaleness: gateway.revocationMaximumStaleness, logger: logger.with("component", "revocations"))
            readiness.add("revocations") {
                revocations.isCurrent ? nil : "identity's revocation feed not read (recently enough)"
            }
            let authenticator = Authenticator(
                keys: signingKeys, revocations: revocations, identity: identity,
                tokenCacheCapacity: gateway.tokenCacheCapacity, mergeCacheLifetime: gateway.mergeCacheLifetime,
                logger: logger.with("component", "auth"))
            let protection = Protection(
                maxInFlight: gateway.maxInFlight, addressRate: gateway.addressRate, userRate: gateway.userRate,
                maxRequestBytes: gateway.maxRequestBytes)
            let boardOwners = directory.pools[BoardOwners.service].map { pool in
                BoardOwners(pool: pool, logger: logger.with("component", "board-owners"))
            }
            let pipeline = CallPipeline(
                authenticator: authenticator, pools: directory.pools, protection: protection,
                deadlineMargin: gateway.deadlineMargin,
                boardOwners: boardOwners)
            var rpcConfiguration = configuration.rpcServerConfiguration
            // One client cannot hold the gateway's descriptors and TLS memory: its connections are bounded.
            rpcConfiguration.maxConnectionsPerAddress = gateway.maxConnectionsPerAddress
            // Metrics name the methods the gateway routes; any other name a client sends is "unknown".
            rpcConfiguration.fallbackMethodNames = MethodRoute.knownMethods
            let server = RPCServer(
                configuration: rpcConfiguration,
                services: [GatewayHandler(pipeline: pipeline)], access: .open, tls: serverTLS, group: group,
                logger: logger.with("component", "rpc"), observer: RPCMetrics(registry: metrics),
                fallback: { request, context in try await pipeline.proxy(request: request, context: context) },
                loopFallback: { request, context, loop, completion in
                    pipeline.startProxy(request: request, context: context, loop: loop, completion: completion)
                })
            metrics.registerGauges(for: server)
            let rpc = RPCServerService(server: server)
            try rpc.bind()
            self.serverTLS = serverTLS
            self.rpc = rpc
            self.pipeline = pipeline
            self.signingKeys = signingKeys
            self.revocations = revocations
            // Stopped in reverse: the RPC server drains first, then background work, the admin server last.
            var services: [any Service] = [
                admin,
                MemoryTrimmer(
                    interval: configuration.memoryTrimInterval, logger: logger.with("component", "memory")),
                signingKeys, revocations, directory,
            ]
            if let boardOwners { services.append(boardOwners) }
            services.append(rpc)
            let serviceGroup = ServiceGroup(
                services: services,
                gracePeriod: configuration.shutdownGracePeriod + .seconds(5),
                logger: logger)
            self.serviceGroup = serviceGroup
            readiness.add("accepting") { serviceGroup.isShuttingDown ? "shutting down" : nil }
            readiness.finishStartup()
        } catch {
            admin.closeNow()
            throw error
        }
    }

    /// The RPC port actually bound.
    var rpcPort: Int { rpc.server.localPort }

    /// The admin port actually bound.
    var adminPort: Int { admin.localPort ?? 0 }

    /// Whether shutdown has begun.
    var isShuttingDown: Bool { serviceGroup.isShuttingDown }

    /// Serves until shutdown, then stops everything in reverse order and stops the event loops.
    func run() async throws {
        defer { group.shutdown() }
        try await serviceGroup.run()
    }

    /// Begins a graceful shutdown (what SIGTERM does); safe from any thread, any number of times.
    func triggerShutdown() {
        serviceGroup.triggerShutdown()
    }

    /// Re-reads the client-facing TLS files (what SIGHUP does).
    func reloadCertificates() throws(TransportError) {
        try serverTLS.reload()
    }
}
