import Foundation
import RaveRPC
import RaveTelemetry
import RaveTransport

/// The `main` of every service.
///
/// It reads the configuration and sets up logging, metrics, the database and its migrations, the RPC server with
/// mTLS, the admin HTTP server, and signal handling, so a service's own `main` is a few lines:
///
/// ```swift
/// @main struct IdentityMain {
///     static func main() async {
///         await RaveServiceMain.run(name: "identity", migrations: .directory("Services/Identity/Migrations")) {
///             context in [IdentityHandler(pool: context.pool)]
///         }
///     }
/// }
/// ```
///
/// On SIGTERM or SIGINT: `/readyz` turns 503, the RPC server sends GOAWAY and lets in-flight calls finish,
/// background services stop, the pool closes, and the process exits 0 (1 when a part failed). A second signal
/// exits at once. SIGHUP re-reads the TLS certificate, key and CA.
public enum RaveServiceMain {
    /// Exit status for configuration errors (sysexits.h EX_CONFIG), so supervisors can tell them from crashes.
    public static let configurationErrorStatus: Int32 = 78

    public static func run(
        name: String, migrations: MigrationSource = .none,
        services makeServices: @escaping @Sendable (ServiceContext) async throws -> [any RPCService]
    ) async -> Never {
        await run(name: name, options: RuntimeOptions(migrations: migrations)) { context in
            RPCServing(services: try await makeServices(context))
        }
    }

    /// The `main` of any process, the gateway included: `options` and `makeServing` as in `ServiceRuntime.start`.
    public static func run(
        name: String, options: RuntimeOptions,
        serving makeServing: @escaping @Sendable (ServiceContext) async throws -> RPCServing
    ) async -> Never {
        // First, before anything starts a thread: every thread must block the signals the watcher waits for.
        SignalWatcher.blockSignals()
        let environment = ProcessInfo.processInfo.environment
        if options.usesDatabase && CommandLine.arguments.dropFirst().first == "migrate" {
            await migrateAndExit(name: name, environment: environment, migrations: options.migrations)
        }
        let runtime: ServiceRuntime
        do {
            runtime = try await ServiceRuntime.start(
                name: name, environment: environment, options: options, serving: makeServing)
        } catch let error as RuntimeError where error.kind == .invalidConfiguration {
            Logger(label: name).critical("configuration error: \(error.message)")
            exit(configurationErrorStatus)
        } catch {
            Logger(label: name).critical("start-up failed", [("error", "\(error)")])
            exit(1)
        }
        let logger = runtime.logger
        let limit = runtime.shutdownLimit
        let watchdog = ShutdownWatchdog(limit: limit) {
            logger.critical("shutdown did not finish within \(limit); exiting")
            exit(1)
        }
        do {
            try SignalWatcher.start { signal in handle(signal, runtime: runtime, watchdog: watchdog) }
            try await runtime.run()
            logger.notice("stopped cleanly")
            exit(0)
        } catch {
            logger.critical("stopped with an error", [("error", "\(error)")])
            exit(1)
        }
    }

    private static func handle(_ signal: ProcessSignal, runtime: ServiceRuntime, watchdog: ShutdownWatchdog) {
        let logger = runtime.logger
        switch signal {
        case .terminate, .interrupt:
            if runtime.isShuttingDown {
                logger.warning("second \(signal.name) during shutdown; exiting now")
                exit(1)
            }
            logger.notice("received \(signal.name); shutting down")
            runtime.triggerShutdown(watchdog: watchdog)
        case .hangup:
            do {
                try runtime.reloadCertificates()
                logger.notice("received SIGHUP; reloaded TLS certificates")
            } catch {
                logger.error(
                    "received SIGHUP; TLS reload failed, keeping the old certificates", [("error", "\(error)")])
            }
        }
    }

    /// `<service> migrate`: applies the migrations and exits 0, 78 for a configuration error, 1 otherwise.
    private static func migrateAndExit(
        name: String, environment: [String: String], migrations: MigrationSource
    )
        async -> Never
    {
        do {
            try await ServiceRuntime.migrateOnly(name: name, environment: environment, migrations: migrations)
            exit(0)
        } catch let error as RuntimeError where error.kind == .invalidConfiguration {
            Logger(label: name).critical("configuration error: \(error.message)")
            exit(configurationErrorStatus)
        } catch {
            Logger(label: name).critical("migration failed", [("error", "\(error)")])
            exit(1)
        }
    }
}
