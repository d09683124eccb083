import Foundation
import RaveMessages
import RaveProtobuf
import RaveRPC
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@testable import RaveRuntime

/// The runtime every executable starts through, the gateway included: a process without a database, with its
/// own access policy, a fallback for methods no service has, and a watchdog over its shutdown.
@Suite struct SharedRuntimeTests {
    func withCertificates<T>(_ body: (String) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-shared-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["runtime-test", "gateway"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        return try await body(directory)
    }

    func environment(_ directory: String) -> [String: String] {
        [
            "RAVE_CERT_DIR": directory, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
            "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "critical", "RAVE_SHUTDOWN_GRACE": "0s",
            "RAVE_TLS_CLIENT_AUTH": "false",
        ]
    }

    @Test func processWithoutDatabaseServesAnOpenPolicyAndItsFallback() async throws {
        try await withCertificates { directory in
            var settings = environment(directory)
            // A database URL in the environment is ignored by a process that has no database.
            settings["RAVE_DATABASE_URL"] = "postgresql://nobody@127.0.0.1:1/none"
            let runtime = try await ServiceRuntime.start(
                name: "runtime-test", environment: settings,
                options: RuntimeOptions(usesDatabase: false, requestClientCertificate: true)
            ) { _ in
                RPCServing(
                    services: [], access: .open,
                    fallback: { request, context in Array(context.method.utf8) + request })
            }
            let running = Task { try await runtime.run() }
            #expect(runtime.context.database == nil)

            // A client without a certificate: the open policy admits it, the fallback answers.
            let clientGroup = try EventLoopGroup(loopCount: 1)
            let tls = try TLSContext(.client(trustRootsPath: "\(directory)/ca.pem"))
            let client = RPCClient(host: "127.0.0.1", port: runtime.rpcPort, tls: tls, group: clientGroup)
            let answer = try await client.call(
                method: "rave.anything.v1.Any/Thing", request: [1, 2], options: CallOptions(timeout: .seconds(5)))
            #expect(answer == Array("rave.anything.v1.Any/Thing".utf8) + [1, 2])

            client.close()
            runtime.triggerShutdown()
            try await running.value
            clientGroup.shutdown()
        }
    }

    @Test func watchdogEndsAShutdownThatHangs() async throws {
        try await withCertificates { directory in
            let stuck = StuckService()
            let runtime = try await ServiceRuntime.start(
                name: "runtime-test", environment: environment(directory),
                options: RuntimeOptions(usesDatabase: false)
            ) { context in
                context.addBackgroundService(stuck)
                return RPCServing(services: [], access: .open)
            }
            let running = Task { try await runtime.run() }
            let expired = ShutdownLatch()
            runtime.triggerShutdown(watchdog: ShutdownWatchdog(limit: .milliseconds(50)) { expired.open() })
            await expired.wait()
            #expect(expired.isOpen)
            stuck.release()
            _ = try? await running.value
        }
    }

    @Test func shutdownLimitAllowsTwoGracePeriods() async throws {
        try await withCertificates { directory in
            var settings = environment(directory)
            settings["RAVE_SHUTDOWN_GRACE"] = "7s"
            let runtime = try await ServiceRuntime.start(
                name: "runtime-test", environment: settings, options: RuntimeOptions(usesDatabase: false)
            ) { _ in RPCServing(services: [], access: .open) }
            let running = Task { try await runtime.run() }
            #expect(runtime.shutdownLimit == .seconds(24))
            runtime.triggerShutdown()
            try await running.value
        }
    }
}

/// A background service that ignores `shutdown()` until the test releases it.
private final class StuckService: Service {
    let name = "stuck"
    private let released = ShutdownLatch()

    func run() async throws {
        await released.wait()
    }

    func shutdown() async {}

    func release() {
        released.open()
    }
}
