import Foundation
import RaveRPC
import RaveRuntime
import RaveTelemetry
import Synchronization

/// The `gateway` executable: the only endpoint game clients reach (docs/gateway.md).
///
/// It starts through the runtime every service uses (`RaveServiceMain`), so signals, the shutdown watchdog,
/// metrics and health are the same: SIGTERM/SIGINT drain gracefully (a second one exits at once), SIGHUP reloads
/// the client-facing certificate.
package enum GatewayMain {
    package static func main() async {
        await RaveServiceMain.run(name: "gateway", options: GatewayDependencies.runtimeOptions) { context in
            try GatewayDependencies(context: context).serving
        }
    }
}

/// A gateway process started in-process (tests, `rave-bench gateway`): the shared runtime with the gateway's parts.
final class GatewayRuntime: Sendable {
    let runtime: ServiceRuntime
    let dependencies: GatewayDependencies

    /// Reads the configuration and binds both ports; serving begins at once, `run()` then waits for shutdown.
    static func start(environment: [String: String]) async throws -> GatewayRuntime {
        let assembled = Mutex<GatewayDependencies?>(nil)
        let runtime = try await ServiceRuntime.start(
            name: "gateway", environment: environment, options: GatewayDependencies.runtimeOptions
        ) { context in
            let dependencies = try GatewayDependencies(context: context)
            assembled.withLock { $0 = dependencies }
            return dependencies.serving
        }
        guard let dependencies = assembled.withLock({ $0 }) else {
            preconditionFailure("ServiceRuntime.start returned without running the gateway's setup")
        }
        return GatewayRuntime(runtime: runtime, dependencies: dependencies)
    }

    private init(runtime: ServiceRuntime, dependencies: GatewayDependencies) {
        self.runtime = runtime
        self.dependencies = dependencies
    }

    var pipeline: CallPipeline { dependencies.pipeline }
    var signingKeys: SigningKeyStore { dependencies.signingKeys }
    var revocations: RevocationFeed { dependencies.revocations }
    /// What `/readyz` reports (signing keys fetched, a healthy backend per service, not shutting down).
    var readiness: ReadinessChecks { runtime.context.readiness }
    var logger: Logger { runtime.logger }
    /// The RPC port actually bound.
    var rpcPort: Int { runtime.rpcPort }
    /// The HTTP/JSON front door's port actually bound; nil when it is off.
    var httpPort: Int? { dependencies.frontDoor?.localPort }
    /// The origins the front door serves besides its own.
    var allowedOrigins: AllowedOrigins { dependencies.allowedOrigins }
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
