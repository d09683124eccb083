// What the package's other modules (the gateway benchmark, Benchmarks/Gateway) start in-process. `package` access:
// nothing outside this package sees it.

/// A gateway process started in-process, as `GatewayRuntime` starts it for tests.
package final class GatewayInProcess: Sendable {
    private let runtime: GatewayRuntime

    private init(runtime: GatewayRuntime) {
        self.runtime = runtime
    }

    /// Reads the configuration and binds both ports; serving begins at once, `run()` then waits for shutdown.
    package static func start(environment: [String: String]) async throws -> GatewayInProcess {
        let runtime = try await GatewayRuntime.start(environment: environment)
        return GatewayInProcess(runtime: runtime)
    }

    /// The RPC port actually bound.
    package var rpcPort: Int { runtime.rpcPort }

    /// Fetches identity's signing keys and the revocations now, rather than on the first call or poll.
    package func loadSigningKeysAndRevocations() async {
        await runtime.signingKeys.refresh()
        _ = await runtime.revocations.poll()
    }

    /// Serves until shutdown, then stops everything in reverse order.
    package func run() async throws {
        try await runtime.run()
    }

    /// Begins a graceful shutdown (what SIGTERM does).
    package func triggerShutdown() {
        runtime.triggerShutdown()
    }
}
