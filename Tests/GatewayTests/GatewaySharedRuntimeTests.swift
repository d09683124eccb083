import RaveRuntime
import Testing

@testable import Gateway

/// The gateway starts through the runtime every service uses, so it has what they have (the shutdown watchdog,
/// the same readiness and signals) and nothing a service's environment could add (a database).
@Suite(.timeLimit(.minutes(2)))
struct GatewaySharedRuntimeTests {
    @Test func gatewayHasNoDatabaseEvenWhenTheEnvironmentNamesOne() async throws {
        let harness = try await GatewayHarness.start(["RAVE_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"])
        #expect(harness.runtime.runtime.context.database == nil)
        #expect(harness.runtime.runtime.configuration.serviceName == "gateway")
        try await harness.stop()
    }

    @Test func gatewayShutdownIsWatchedLikeEveryService() async throws {
        let harness = try await GatewayHarness.start()
        // The gateway's grace period (1s in the harness) twice, plus ten seconds.
        #expect(harness.runtime.runtime.shutdownLimit == .seconds(12))
        let expired = ShutdownLatch()
        harness.runtime.runtime.triggerShutdown(watchdog: ShutdownWatchdog(limit: .zero) { expired.open() })
        await expired.wait()
        #expect(expired.isOpen)
        try await harness.stop()
    }
}
