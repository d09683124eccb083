import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization

/// One service process, assembled: event loops, database pool and migrations, the RPC server with its TLS
/// context, the admin server, and the service group that runs and stops them.
///
/// `RaveServiceMain` adds signals and the exit status; tests drive it directly with `triggerShutdown()`.
public final class ServiceRuntime: Sendable {
    public let configuration: ServiceConfiguration
    public let context: ServiceContext
    public let logger: Logger
    private let group: EventLoopGroup
    private let tls: TLSContext
    private let rpc: RPCServerService
    private let admin: AdminHTTPServer
    private let serviceGroup: ServiceGroup

    /// Reads the configuration, connects, migrates, creates the handlers, and binds both ports; serving
    /// begins at once, `run()` then waits for shutdown.
    public static func start(
        name: String, environment: [String: String], migrations: MigrationSource = .none,
        services makeServices: @escaping @Sendable (ServiceContext) async throws -> [any RPCService]
    ) async throws -> ServiceRuntime {
        try await start(name: name, environment: environment, options: RuntimeOptions(migrations: migrations)) {
            context in RPCServing(services: try await makeServices(context))
        }
    }

    /// Starts any process of the project, the gateway included: `options` say whether it has a database and how
    /// its TLS server asks for client certificates, and `makeServing` says what its RPC server serves and whom
    /// it admits.
    public static func start(
        name: String, environment: [String: String], options: RuntimeOptions,
        serving makeServing: @Sendable (ServiceContext) async throws -> RPCServing
    ) async throws -> ServiceRuntime {
        let configuration = try ServiceConfiguration(
            serviceName: name, environment: environment, coreCount: System.coreCount)
        let logger = Logger(label: name, level: configuration.logLevel)
        logger.info("starting", configuration.effectiveSettings)
        MemoryTrimmer.configureAllocator()
        let group = try EventLoopGroup(loopCount: configuration.eventLoopCount)
        do {
            return try await ServiceRuntime(
                configuration: configuration, environment: environment, options: options, logger: logger,
                group: group, makeServing: makeServing)
        } catch {
            group.shutdown()
            throw error
        }
    }

    private init(
        configuration: ServiceConfiguration, environment: [String: String], options: RuntimeOptions,
        logger: Logger, group: EventLoopGroup, makeServing: @Sendable (ServiceContext) async throws -> RPCServing
    ) async throws {
        self.configuration = configuration
        self.logger = logger
        self.group = group
        let metrics = MetricsRegistry.shared
        let readiness = ReadinessChecks()
        let admin = AdminHTTPServer(
            address: configuration.adminListen, group: group, metrics: metrics, readiness: readiness,
            logger: logger.with("component", "admin"), maxConnections: configuration.adminMaxConnections)
        try admin.bind()
        self.admin = admin

        var database: PostgresPool?
        if options.usesDatabase, let url = configuration.databaseURL {
            var poolConfiguration = PostgresPool.Configuration(connectionString: url)
            poolConfiguration.size = configuration.databasePoolSize
            let pool = try PostgresPool(
                configuration: poolConfiguration, group: group, logger: logger.with("component", "postgres"))
            database = pool
            metrics.registerGauges(for: pool)
            readiness.add("database", throwing: { try await pool.query(PostgresQuery("SELECT 1")) })
            let migrated = Flag()
            readiness.add("migrations") { migrated.isSet ? nil : "not applied yet" }
            do {
                try await Self.migrate(pool, options.migrations, environment: environment, logger: logger)
            } catch {
                pool.shutdown()
                admin.closeNow()
                throw error
            }
            migrated.set()
        }

        let context = ServiceContext(
            configuration: configuration, environment: environment, logger: logger, group: group, metrics: metrics,
            readiness: readiness, database: database)
        self.context = context
        do {
            var tlsConfiguration = TLSConfiguration.server(
                certificateChainPath: configuration.tlsCertificatePath,
                privateKeyPath: configuration.tlsPrivateKeyPath,
                trustRootsPath: configuration.tlsCertificateAuthorityPath,
                requireClientCertificate: configuration.requireClientCertificate)
            if options.requestClientCertificate { tlsConfiguration.requestClientCertificate = true }
            let tls = try TLSContext(tlsConfiguration)
            let serving = try await makeServing(context)
            let server = RPCServer(
                configuration: serving.configuration ?? configuration.rpcServerConfiguration,
                services: serving.services, access: serving.access, tls: tls, group: group,
                logger: logger.with("component", "rpc"),
                observer: RPCMetrics(registry: metrics), fallback: serving.fallback,
                loopFallback: serving.loopFallback, admission: serving.admission)
            metrics.registerGauges(for: server)
            let rpc = RPCServerService(server: server)
            try rpc.bind()
            self.tls = tls
            self.rpc = rpc
        } catch {
            database?.shutdown()
            admin.closeNow()
            throw error
        }

        // Stopped in reverse: the RPC server drains first, the admin server answers probes until the very end.
        var services: [any Service] = [
            admin,
            MemoryTrimmer(
                interval: configuration.memoryTrimInterval, logger: logger.with("component", "memory")),
        ]
        if let database { services.append(DatabaseService(pool: database)) }
        services += context.backgroundServices
        services.append(self.rpc)
        let serviceGroup = ServiceGroup(
            services: services, gracePeriod: configuration.shutdownGracePeriod + .seconds(5), logger: logger)
        self.serviceGroup = serviceGroup
        readiness.add("accepting") { serviceGroup.isShuttingDown ? "shutting down" : nil }
        readiness.finishStartup()
    }

    /// The RPC port actually bound (differs from the configured one when that is 0).
    public var rpcPort: Int { rpc.server.localPort }

    /// The admin port actually bound.
    public var adminPort: Int { admin.localPort ?? 0 }

    /// Whether shutdown has begun.
    public var isShuttingDown: Bool { serviceGroup.isShuttingDown }

    /// Serves until shutdown, then stops everything in reverse order and stops the event loops.
    public func run() async throws {
        defer { group.shutdown() }
        try await serviceGroup.run()
    }

    /// Begins a graceful shutdown (what SIGTERM does); safe from any thread, any number of times.
    public func triggerShutdown() {
        serviceGroup.triggerShutdown()
    }

    /// Begins a graceful shutdown and arms `watchdog`, which ends the process if the shutdown hangs.
    ///
    /// A stuck part must not keep a terminated process alive forever. The watchdog is armed once, however often
    /// this is called.
    public func triggerShutdown(watchdog: ShutdownWatchdog) {
        serviceGroup.triggerShutdown()
        watchdog.arm()
    }

    /// How long a shutdown may take before the watchdog of `RaveServiceMain` ends the process: twice the grace
    /// period (each stage may use it) and ten seconds more.
    public var shutdownLimit: Duration { configuration.shutdownGracePeriod * 2 + .seconds(10) }

    /// Re-reads the TLS files (what SIGHUP does); new connections use them, established ones keep theirs.
    public func reloadCertificates() throws(TransportError) {
        try tls.reload()
        for other in context.reloadableTLS { try other.reload() }
    }

    /// Applies the service's migrations and returns, serving nothing (`<service> migrate`, `ravectl migrate`).
    public static func migrateOnly(
        name: String, environment: [String: String], migrations: MigrationSource
    ) async throws {
        let configuration = try ServiceConfiguration(
            serviceName: name, environment: environment, coreCount: System.coreCount)
        let logger = Logger(label: name, level: configuration.logLevel)
        guard let url = configuration.databaseURL else {
            throw RuntimeError(.invalidConfiguration, "RAVE_DATABASE_URL must name the database to migrate")
        }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        var poolConfiguration = PostgresPool.Configuration(connectionString: url)
        poolConfiguration.size = 1
        let pool = try PostgresPool(configuration: poolConfiguration, group: group, logger: logger)
        defer { pool.shutdown() }
        try await migrate(pool, migrations, environment: environment, logger: logger)
    }

    private static func migrate(
        _ pool: PostgresPool, _ source: MigrationSource, environment: [String: String], logger: Logger
    ) async throws {
        let migrator: Migrator
        switch source {
        case .none: return
        case .directory(let directory):
            migrator = try Migrator(pool: pool, directory: environment["RAVE_MIGRATIONS_DIR"] ?? directory)
        case .list(let migrations):
            migrator = Migrator(pool: pool, migrations: migrations)
        }
        let applied = try await migrator.migrate()
        logger.info(
            "migrations applied",
            [("count", String(applied.count)), ("versions", applied.map { String($0.version) }.joined(separator: ","))])
    }
}

/// A boolean that flips once, shared between start-up and the readiness check that reports it.
private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() {
        value.store(true, ordering: .releasing)
    }
}
