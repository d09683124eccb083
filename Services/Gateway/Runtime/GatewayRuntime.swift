import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport
import Synchronization

/// The gateway's own parts, assembled inside the runtime every process shares (`ServiceRuntime`): mTLS
/// connections to every service, identity's signing keys and revocation feed, the call pipeline, and what its
/// RPC server serves.
///
/// The runtime brings the rest, as for any service: event loops, the client-facing TLS server (client
/// certificates requested, not required), the admin HTTP server, signals, the shutdown watchdog, and the
/// service group that runs and stops it all. The gateway has no database.
final class Gateway: Sendable {
    /// How the gateway uses the runtime: no database, client certificates requested (admin and service peers
    /// present one).
    static let runtimeOptions = RuntimeOptions(usesDatabase: false, requestClientCertificate: true)

    let settings: GatewayConfiguration
    let pipeline: CallPipeline
    let signingKeys: SigningKeyStore
    /// Sessions identity has ended, whose tokens are refused.
    let revocations: RevocationFeed
    /// What the RPC server serves: the gateway's own methods, every other one proxied.
    let serving: RPCServing

    /// Reads the gateway's settings and builds its parts, registering their readiness checks and background
    /// services with `context`.
    init(context: ServiceContext) throws {
        let settings = try GatewayConfiguration(environment: context.environment, service: context.configuration)
        context.logger.info("gateway settings", settings.effectiveSettings)
        self.settings = settings
        let logger = context.logger
        let readiness = context.readiness
        let backendTLS = try TLSContext(
            .client(
                trustRootsPath: settings.certificateAuthorityPath,
                certificateChainPath: settings.backendCertificatePath,
                privateKeyPath: settings.backendPrivateKeyPath))
        let directory = BackendDirectory(
            backends: settings.backends, tls: backendTLS, group: context.group,
            connectionsPerBackend: settings.backendConnections, healthCheckInterval: settings.healthCheckInterval,
            logger: logger.with("component", "backends"))
        guard let identityPool = directory.pools["identity"] else {
            throw RuntimeError.invalidValue(
                "RAVE_GATEWAY_IDENTITY_ADDRESSES", "", allowed: "at least one identity address")
        }
        let identity = ServiceCaller(pool: identityPool)
        let signingKeys = SigningKeyStore(
            identity: identity, interval: settings.keyRefreshInterval, minimumGap: settings.keyRefreshMinimumGap,
            logger: logger.with("component", "signing-keys"))
        readiness.add("backends") {
            let missing = directory.servicesWithoutHealthyBackend
            return missing.isEmpty ? nil : "no healthy backend yet for " + missing.joined(separator: ", ")
        }
        readiness.add("signing-keys") { signingKeys.verifier == nil ? "not fetched from identity yet" : nil }
        let revocations = RevocationFeed(
            identity: identity, interval: settings.revocationPollInterval,
            maximumStaleness: settings.revocationMaximumStaleness, logger: logger.with("component", "revocations"))
        readiness.add("revocations") {
            revocations.isCurrent ? nil : "identity's revocation feed not read (recently enough)"
        }
        let authenticator = Authenticator(
            keys: signingKeys, revocations: revocations, identity: identity,
            tokenCacheCapacity: settings.tokenCacheCapacity, mergeCacheLifetime: settings.mergeCacheLifetime,
            logger: logger.with("component", "auth"))
        let protection = Protection(
            maxInFlight: settings.maxInFlight, addressRate: settings.addressRate, userRate: settings.userRate,
            maxRequestBytes: settings.maxRequestBytes)
        let boardOwners = directory.pools[BoardOwners.service].map { pool in
            BoardOwners(pool: pool, logger: logger.with("component", "board-owners"))
        }
        let pipeline = CallPipeline(
            authenticator: authenticator, pools: directory.pools, protection: protection,
            deadlineMargin: settings.deadlineMargin, boardOwners: boardOwners)
        // Started before the RPC server, stopped after it has drained.
        context.addBackgroundService(signingKeys)
        context.addBackgroundService(revocations)
        context.addBackgroundService(directory)
        if let boardOwners { context.addBackgroundService(boardOwners) }

        var rpcConfiguration = context.configuration.rpcServerConfiguration
        // One client cannot hold the gateway's descriptors and TLS memory: its connections are bounded.
        rpcConfiguration.maxConnectionsPerAddress = settings.maxConnectionsPerAddress
        // Metrics name the methods the gateway routes; any other name a client sends is "unknown".
        rpcConfiguration.fallbackMethodNames = MethodRoute.knownMethods
        serving = RPCServing(
            services: [GatewayHandler(pipeline: pipeline)], access: .open,
            fallback: { request, context in try await pipeline.proxy(request: request, context: context) },
            loopFallback: { request, context, loop, completion in
                pipeline.startProxy(request: request, context: context, loop: loop, completion: completion)
            },
            configuration: rpcConfiguration)
        self.pipeline = pipeline
        self.signingKeys = signingKeys
        self.revocations = revocations
    }
}

/// A gateway process started in-process (tests, `rave-bench gateway`): the shared runtime with the gateway's parts.
final class GatewayRuntime: Sendable {
    let runtime: ServiceRuntime
    let gateway: Gateway

    /// Reads the configuration and binds both ports; serving begins at once, `run()` then waits for shutdown.
    static func start(environment: [String: String]) async throws -> GatewayRuntime {
        let assembled = Mutex<Gateway?>(nil)
        let runtime = try await ServiceRuntime.start(
            name: "gateway", environment: environment, options: Gateway.runtimeOptions
        ) { context in
            let gateway = try Gateway(context: context)
            assembled.withLock { $0 = gateway }
            return gateway.serving
        }
        guard let gateway = assembled.withLock({ $0 }) else {
            preconditionFailure("ServiceRuntime.start returned without running the gateway's setup")
        }
        return GatewayRuntime(runtime: runtime, gateway: gateway)
    }

    private init(runtime: ServiceRuntime, gateway: Gateway) {
        self.runtime = runtime
        self.gateway = gateway
    }

    var pipeline: CallPipeline { gateway.pipeline }
    var signingKeys: SigningKeyStore { gateway.signingKeys }
    var revocations: RevocationFeed { gateway.revocations }
    /// What `/readyz` reports (signing keys fetched, a healthy backend per service, not shutting down).
    var readiness: ReadinessChecks { runtime.context.readiness }
    var logger: Logger { runtime.logger }
    /// The RPC port actually bound.
    var rpcPort: Int { runtime.rpcPort }
    /// The admin port actually bound.
    var adminPort: Int { runtime.adminPort }

    /// Serves until shutdown, then stops everything in reverse order and stops the event loops.
    func run() async throws {
        try await runtime.run()
    }

    /// Begins a graceful shutdown (what SIGTERM does); safe from any thread, any number of times.
    func triggerShutdown() {
        runtime.triggerShutdown()
    }
}
