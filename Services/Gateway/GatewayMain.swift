import Foundation
import RaveRuntime
import RaveTelemetry

/// The `gateway` executable: the only endpoint game clients reach (docs/gateway.md).
///
/// Signals as every service: SIGTERM/SIGINT drain gracefully (a second one exits at once), SIGHUP reloads
/// the client-facing certificate.
@main
enum GatewayMain {
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "bench" {
            exit(await GatewayBenchmark.run(environment: ProcessInfo.processInfo.environment))
        }
        // First, before anything starts a thread: every thread must block the signals the watcher waits for.
        SignalWatcher.blockSignals()
        let runtime: GatewayRuntime
        do {
            runtime = try await GatewayRuntime.start(environment: ProcessInfo.processInfo.environment)
        } catch let error as RuntimeError where error.kind == .invalidConfiguration {
            Logger(label: "gateway").critical("configuration error: \(error.message)")
            exit(RaveServiceMain.configurationErrorStatus)
        } catch {
            Logger(label: "gateway").critical("start-up failed", [("error", "\(error)")])
            exit(1)
        }
        let logger = runtime.logger
        do {
            try SignalWatcher.start { signal in handle(signal, runtime: runtime) }
            try await runtime.run()
            logger.notice("stopped cleanly")
            exit(0)
        } catch {
            logger.critical("stopped with an error", [("error", "\(error)")])
            exit(1)
        }
    }

    private static func handle(_ signal: ProcessSignal, runtime: GatewayRuntime) {
        switch signal {
        case .terminate, .interrupt:
            if runtime.isShuttingDown {
                runtime.logger.warning("second \(signal.name) during shutdown; exiting now")
                exit(1)
            }
            runtime.logger.notice("received \(signal.name); shutting down")
            runtime.triggerShutdown()
        case .hangup:
            do {
                try runtime.reloadCertificates()
                runtime.logger.notice("received SIGHUP; reloaded TLS certificates")
            } catch {
                runtime.logger.error("received SIGHUP; TLS reload failed", [("error", "\(error)")])
            }
        }
    }
}
