import Foundation
import RavePostgres
import RaveTelemetry
import RaveTransport
import Synchronization

/// Where a service's migrations come from.
public enum MigrationSource: Sendable {
    /// The service has no database schema of its own.
    case none
    /// `NNNN_description.sql` files in a directory (relative to the working directory); `RAVE_MIGRATIONS_DIR`
    /// overrides it for installed layouts.
    case directory(String)
    /// Migrations compiled into the executable.
    case list([Migration])
}

extension MigrationSource {
    /// The `Migrations` folder a service ships as a SwiftPM resource of `bundle` (its module's `Bundle.module`), so
    /// an installed binary finds it next to itself.
    public static func shippedDirectory(in bundle: Bundle) -> String {
        (bundle.resourceURL ?? URL(fileURLWithPath: ".")).appendingPathComponent("Migrations").path
    }
}

/// What a service's setup closure gets: its configuration and the shared resources the runtime created.
public final class ServiceContext: Sendable {
    public let configuration: ServiceConfiguration
    /// The process environment, for service-specific settings (read them with a `ConfigurationReader`).
    public let environment: [String: String]
    public let logger: Logger
    public let group: EventLoopGroup
    public let metrics: MetricsRegistry
    public let readiness: ReadinessChecks
    /// The database pool; nil for processes without a database (the gateway).
    public let database: PostgresPool?
    private let extraServices: Mutex<[any Service]>
    private let extraTLS = Mutex<[TLSContext]>([])

    init(
        configuration: ServiceConfiguration, environment: [String: String], logger: Logger, group: EventLoopGroup,
        metrics: MetricsRegistry, readiness: ReadinessChecks, database: PostgresPool?
    ) {
        self.configuration = configuration
        self.environment = environment
        self.logger = logger
        self.group = group
        self.metrics = metrics
        self.readiness = readiness
        self.database = database
        extraServices = Mutex([])
    }

    /// The database pool of a service that has one.
    ///
    /// Asking for it in a process configured without a database is a programming error and stops the process.
    public var pool: PostgresPool {
        guard let database else {
            preconditionFailure("\(configuration.serviceName) has no database; set RAVE_DATABASE_URL")
        }
        return database
    }

    /// Runs `service` alongside the RPC server (a delivery worker, a lease keeper); it starts before the RPC
    /// server and stops after it has drained.
    public func addBackgroundService(_ service: any Service) {
        extraServices.withLock { $0.append(service) }
    }

    var backgroundServices: [any Service] { extraServices.withLock { $0 } }

    /// Reloads `tls` whenever the process reloads its own certificates (SIGHUP): another port of the process that
    /// serves the same files (the gateway's HTTP port).
    public func reloadWithCertificates(_ tls: TLSContext) {
        extraTLS.withLock { $0.append(tls) }
    }

    var reloadableTLS: [TLSContext] { extraTLS.withLock { $0 } }
}
