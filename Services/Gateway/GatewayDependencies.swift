import RaveHTTP
import RaveMessages
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
final class GatewayDependencies: Sendable {
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
    /// The web origins the HTTP front door serves besides its own (filled from the applications' settings).
    let allowedOrigins: AllowedOrigins
    /// The HTTP/JSON front door; nil when `RAVE_GATEWAY_HTTP_LISTEN` is empty.
    let frontDoor: FrontDoorServer?
    /// The OpenAPI document `/v1/openapi.json` serves, generated from Proto/ by `rave-protogen`.
    static let openAPIDocument: [UInt8]? = Array(OpenAPIDocument.json.utf8)

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
            reconnectBackoff: settings.reconnectBackoff,
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
            deadlineMargin: settings.deadlineMargin, boardOwners: boardOwners,
            audit: AdminAudit(identity: identity, logger: logger.with("component", "audit")))
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
        // One count for both ports: a client's HTTP and binary connections share its per-address limit.
        let admission = ConnectionAdmission(limits: rpcConfiguration.connectionLimits)
        let allowedOrigins = AllowedOrigins()
        if let address = settings.httpListen {
            // The applications' web origins, for the front door's CORS rule.
            context.addBackgroundService(
                AllowedOriginsFeed(identity: identity, logger: logger.with("component", "allowed-origins")) {
                    origins in allowedOrigins.replace(with: origins)
                })
            let frontDoor = try Self.makeFrontDoor(
                address: address, context: context, settings: settings, pipeline: pipeline,
                rpcConfiguration: rpcConfiguration, admission: admission, allowedOrigins: allowedOrigins)
            // Started before the RPC server; stopped after it, draining its own requests.
            context.addBackgroundService(frontDoor)
            self.frontDoor = frontDoor
        } else {
            frontDoor = nil
        }
        self.allowedOrigins = allowedOrigins
        serving = RPCServing(
            services: [GatewayHandler(pipeline: pipeline)], access: .open,
            fallback: { request, context in try await pipeline.proxy(request: request, context: context) },
            loopFallback: { request, context, loop, completion in
                pipeline.startProxy(request: request, context: context, loop: loop, completion: completion)
            },
            configuration: rpcConfiguration, admission: admission)
        self.pipeline = pipeline
        self.signingKeys = signingKeys
        self.revocations = revocations
    }
}

extension GatewayDependencies {
    /// The HTTP/JSON front door on `address` (docs/gateway.md, "HTTP/JSON front door"), its port bound.
    static func makeFrontDoor(
        address: SocketAddress, context: ServiceContext, settings: GatewayConfiguration, pipeline: CallPipeline,
        rpcConfiguration: RPCServerConfiguration, admission: ConnectionAdmission, allowedOrigins: AllowedOrigins
    ) throws -> FrontDoorServer {
        let logger = context.logger.with("component", "http")
        let tls = try TLSContext(FrontDoorServer.tlsConfiguration(context.configuration))
        context.reloadWithCertificates(tls)
        let (files, missing) = try StaticFiles.load(settings.httpStatic)
        for directory in missing {
            logger.warning("static file directory not found; nothing is served from it", [("directory", directory)])
        }
        let frontDoor = HTTPFrontDoor(
            settings: HTTPFrontDoor.Settings(
                maxRequestBytes: settings.maxRequestBytes, defaultTimeout: rpcConfiguration.defaultTimeout,
                maxTimeout: rpcConfiguration.maxTimeout),
            cors: CORSPolicy(allowedOrigins: allowedOrigins), staticFiles: files,
            openAPIDocument: openAPIDocument, knownMethods: MethodRoute.knownMethods)
        let responder = FrontDoorResponder(
            frontDoor: frontDoor,
            caller: FrontDoorCaller(pipeline: pipeline, transcoder: FrontDoorTranscoder(), logger: logger),
            metrics: FrontDoorMetrics(registry: context.metrics))
        let server = try FrontDoorServer(
            address: address, group: context.group, tls: tls, options: rpcConfiguration.channelOptions,
            admission: admission,
            settings: HTTPServerSettings(
                limits: FrontDoorServer.requestLimits(maxBodyBytes: settings.maxRequestBytes),
                stalledRequestTimeout: context.configuration.stalledFrameTimeout,
                idleTimeout: context.configuration.idleTimeout),
            responder: responder, gracePeriod: context.configuration.shutdownGracePeriod)
        logger.info(
            "HTTP front door listening",
            [("url", "https://\(address.host):\(server.localPort)/"), ("static_files", String(files.files.count))])
        return server
    }
}

extension ShutdownLatch {
    /// Sleeps for `duration` or until the latch opens, whichever comes first.
    ///
    /// Periodic background work thus stops promptly at shutdown. Polls four times a second because a waiter
    /// on the latch could not be cancelled when the sleep ends first.
    func sleep(for duration: Duration) async {
        let end = ContinuousClock.now + duration
        while !isOpen && ContinuousClock.now < end {
            try? await Task.sleep(for: min(.milliseconds(250), end - ContinuousClock.now))
        }
    }
}
