import Foundation
import RaveRPC
import RaveRuntime
import RaveTransport

/// A service started for one test the way its executable starts it (`ServiceRuntime`: mutual TLS, migrations,
/// the admin port, background services), on free loopback ports, with development certificates for it and for
/// the peers the test plays.
///
/// Only the gateway's role may assert a caller (`rave-caller-*` metadata), so a test that calls a service directly
/// as a player or an operator uses `client(as: "gateway")`; internal methods and events are called with the
/// certificate of a service allowed to call them (`client(as: "identity")`).
public final class ServiceUnderTest: Sendable {
    public let runtime: ServiceRuntime
    /// The directory of `ca.pem` and a `<name>.pem` / `<name>-key.pem` pair per certificate; removed by `stop()`.
    public let certificates: String
    /// The loop the test's clients use.
    public let clientGroup: EventLoopGroup
    private let running: Task<Void, any Error>

    /// Development certificates for `name` and `peers` in a fresh directory, for tests that must know it before the
    /// service starts (peers that stand in for other services present these too).
    public static func makeCertificates(for name: String, peers: [String] = ["gateway"]) throws -> String {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("rave-\(name)-under-test-\(UUID().uuidString.prefix(8))").path
        try DevelopmentCertificates.write(to: directory, services: [name] + peers.filter { $0 != name })
        return directory
    }

    /// Starts service `name` serving what `services` returns.
    ///
    /// `environment` is added to the test defaults: loopback port 0 for both ports, the certificates of
    /// `certificates`, one event loop, warnings only, a 2 s shutdown grace, and `databaseURL` with a pool of 4.
    public static func start(
        _ name: String, certificates: String, databaseURL: String? = nil, migrations: MigrationSource = .none,
        environment: [String: String] = [:],
        services: @escaping @Sendable (ServiceContext) async throws -> [any RPCService]
    ) async throws -> ServiceUnderTest {
        var settings = [
            "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
            "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "2s",
        ]
        if let databaseURL {
            settings["RAVE_DATABASE_URL"] = databaseURL
            settings["RAVE_DB_POOL_SIZE"] = "4"
        }
        settings.merge(environment) { _, new in new }
        let runtime = try await ServiceRuntime.start(
            name: name, environment: settings, migrations: migrations, services: services)
        let clientGroup: EventLoopGroup
        do {
            clientGroup = try EventLoopGroup(loopCount: 1)
        } catch {
            runtime.triggerShutdown()
            try? await runtime.run()
            throw error
        }
        return ServiceUnderTest(runtime: runtime, certificates: certificates, clientGroup: clientGroup)
    }

    /// Starts service `name` with fresh certificates for it and `peers`, runs `body`, and stops it whether `body`
    /// threw or not.
    public static func with<Result>(
        _ name: String, peers: [String] = ["gateway"], databaseURL: String? = nil, migrations: MigrationSource = .none,
        environment: [String: String] = [:],
        services: @escaping @Sendable (ServiceContext) async throws -> [any RPCService],
        _ body: (ServiceUnderTest) async throws -> Result
    ) async throws -> Result {
        let certificates = try makeCertificates(for: name, peers: peers)
        let service: ServiceUnderTest
        do {
            service = try await start(
                name, certificates: certificates, databaseURL: databaseURL, migrations: migrations,
                environment: environment, services: services)
        } catch {
            try? FileManager.default.removeItem(atPath: certificates)
            throw error
        }
        do {
            let result = try await body(service)
            try await service.stop()
            return result
        } catch {
            try? await service.stop()
            throw error
        }
    }

    private init(runtime: ServiceRuntime, certificates: String, clientGroup: EventLoopGroup) {
        self.runtime = runtime
        self.certificates = certificates
        self.clientGroup = clientGroup
        running = Task { try await runtime.run() }
    }

    /// The RPC port the service listens on.
    public var port: Int { runtime.rpcPort }

    /// TLS for a client presenting `certificate`'s pair (nil: no client certificate).
    public func clientTLS(as certificate: String?) throws -> TLSContext {
        try TLSContext(
            .client(
                trustRootsPath: "\(certificates)/ca.pem",
                certificateChainPath: certificate.map { "\(certificates)/\($0).pem" },
                privateKeyPath: certificate.map { "\(certificates)/\($0)-key.pem" }))
    }

    /// A client of the service presenting `certificate`'s pair ("gateway" to assert a caller).
    public func client(as certificate: String) throws -> RPCClient {
        RPCClient(host: "127.0.0.1", port: port, tls: try clientTLS(as: certificate), group: clientGroup)
    }

    /// Drains and stops the service (throwing what its `run()` threw), stops the clients' loop and removes the
    /// certificates.
    public func stop() async throws {
        runtime.triggerShutdown()
        defer {
            clientGroup.shutdown()
            try? FileManager.default.removeItem(atPath: certificates)
        }
        try await running.value
    }
}
