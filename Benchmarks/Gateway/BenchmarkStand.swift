import Foundation
import Gateway
import RaveAuth
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport

/// What `rave-bench gateway` measures against, in one process: development certificates, the stand-in backends
/// (identity's signing keys, Echo, the wallet's bets) behind mTLS, and a gateway configured for them.
final class BenchmarkStand: Sendable {
    let directory: String
    let signer: AccessTokenSigner
    let runtime: GatewayInProcess
    let echoPort: Int
    private let running: Task<Void, any Error>
    private let backendGroup: EventLoopGroup
    private let clientGroup: EventLoopGroup
    private let backends: [RPCServer]

    private init(
        directory: String, signer: AccessTokenSigner, runtime: GatewayInProcess, echoPort: Int,
        backendGroup: EventLoopGroup, clientGroup: EventLoopGroup, backends: [RPCServer]
    ) {
        self.directory = directory
        self.signer = signer
        self.runtime = runtime
        self.echoPort = echoPort
        self.backendGroup = backendGroup
        self.clientGroup = clientGroup
        self.backends = backends
        running = Task { try await runtime.run() }
    }

    /// Writes certificates to a temporary directory, starts the backends and the gateway.
    static func start() async throws -> BenchmarkStand {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-gateway-bench-\(UUID())")
            .path
        try DevelopmentCertificates.write(to: directory, services: ["gateway", "identity", "client"])
        let key = try Ed25519PrivateKey()
        let signer = AccessTokenSigner(keyID: "bench-key", privateKey: key)
        let backendGroup = try EventLoopGroup(loopCount: 1)
        let clientGroup = try EventLoopGroup(loopCount: 1)
        let tls = try TLSContext(
            .server(
                certificateChainPath: "\(directory)/identity.pem", privateKeyPath: "\(directory)/identity-key.pem",
                trustRootsPath: "\(directory)/ca.pem", requireClientCertificate: true))
        let quiet = Logger(label: "bench-backend", level: .warning)
        let identity = StandInIdentity(keyID: "bench-key", publicKey: try key.publicKey().rawRepresentation)
        let backends: [any RPCService] = [identity, BenchmarkEcho(), StandInWallet()]
        let servers = backends.map { service in
            RPCServer(services: [service], access: TrustModel.backend, tls: tls, group: backendGroup, logger: quiet)
        }
        for server in servers { try server.start() }
        var environment = [
            "RAVE_CERT_DIR": directory, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
            "RAVE_LOG_LEVEL": "warning",
            "RAVE_GATEWAY_IDENTITY_ADDRESSES": "127.0.0.1:\(servers[0].localPort)",
            "RAVE_GATEWAY_ECHO_ADDRESSES": "127.0.0.1:\(servers[1].localPort)",
            "RAVE_GATEWAY_WALLET_ADDRESSES": "127.0.0.1:\(servers[2].localPort)",
            // The load is one user from one address: limits sized for players would only measure themselves.
            "RAVE_GATEWAY_USER_RATE": "10000000", "RAVE_GATEWAY_USER_BURST": "10000000",
            "RAVE_GATEWAY_ADDRESS_RATE": "10000000", "RAVE_GATEWAY_ADDRESS_BURST": "10000000",
            // The benchmark measures the binary port; the HTTP front door stays off.
            "RAVE_GATEWAY_HTTP_LISTEN": "",
        ]
        for service in ["social", "leaderboards", "gifts", "push"] {
            environment["RAVE_GATEWAY_\(service.uppercased())_ADDRESSES"] = "127.0.0.1:1"
        }
        // Bench runs inherit RAVE_EVENT_LOOPS and friends from the caller's environment.
        environment.merge(ProcessInfo.processInfo.environment.filter { $0.key == "RAVE_EVENT_LOOPS" }) { _, new in new }
        let runtime = try await GatewayInProcess.start(environment: environment)
        await runtime.loadSigningKeysAndRevocations()
        return BenchmarkStand(
            directory: directory, signer: signer, runtime: runtime, echoPort: servers[1].localPort,
            backendGroup: backendGroup, clientGroup: clientGroup, backends: servers)
    }

    /// A player's access token.
    func token(for userID: String) throws -> String {
        try signer.issue(
            subject: userID, applicationID: "bench-app", sessionID: "bench-session", scopes: ["player"],
            lifetime: 3600
        ).token
    }

    /// `count` connections to the gateway, or straight to the Echo backend (with the gateway's certificate, as
    /// the gateway itself connects).
    func connections(_ count: Int, toGateway: Bool) async throws -> [RPCConnection] {
        let tls = try TLSContext(
            .client(
                trustRootsPath: "\(directory)/ca.pem",
                certificateChainPath: toGateway ? nil : "\(directory)/gateway.pem",
                privateKeyPath: toGateway ? nil : "\(directory)/gateway-key.pem"))
        var connections: [RPCConnection] = []
        for _ in 0..<count {
            connections.append(
                try await RPCConnection.connect(
                    host: "127.0.0.1", port: toGateway ? runtime.rpcPort : echoPort, tls: tls, group: clientGroup))
        }
        return connections
    }

    func stop() async throws {
        runtime.triggerShutdown()
        try await running.value
        for server in backends { await server.shutdown() }
        backendGroup.shutdown()
        clientGroup.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The benchmark's results as `make bench` reports them: medians of the runs, and the gateway's targets.
struct BenchmarkReport {
    let results: [[BenchmarkResult]]
    let parameters: GatewayBenchmark.Parameters

    /// The median run of each phase, by throughput.
    var medians: [BenchmarkResult] {
        results.map { runs in runs.sorted { $0.callsPerSecond < $1.callsPerSecond }[runs.count / 2] }
    }

    var summary: String {
        let median = medians
        let ratio = median[0].callsPerSecond > 0 ? median[1].callsPerSecond / median[0].callsPerSecond : 0
        let latencyRatio =
            median[3].p50Microseconds > 0 ? Double(median[4].p50Microseconds) / Double(median[3].p50Microseconds) : 0
        var lines = ["rave-bench gateway, medians of \(parameters.runs) runs:"]
        lines += median.map { "  " + $0.summaryLine }
        lines.append(
            "  echo through the gateway / direct: \(format(ratio))× (the hop's whole cost; the ≥ 0.7× target is measured"
                + " against the real leaderboards service by scripts/bench-leaderboards.sh)")
        lines.append(
            "  CPU per call (load + gateway + backend): direct \(format(median[0].cpuMicrosecondsPerCall)) µs, "
                + "through the gateway \(format(median[1].cpuMicrosecondsPerCall)) µs")
        lines.append("  bets through the gateway: \(Int(median[2].itemsPerSecond.rounded())) bets/s (target ≥ 20,000)")
        lines.append(
            "  p50 of a batch of \(parameters.readsPerBatch) reads / one read: \(format(latencyRatio))× (target ≤ 2×)")
        return lines.joined(separator: "\n")
    }

    var json: String {
        let median = medians
        let runs = results.map { runs in "[" + runs.map(\.jsonObject).joined(separator: ",") + "]" }
        return "{\"benchmark\":\"gateway\",\"mode\":\"in-process gateway, stand-in backends, real TLS\","
            + "\"parameters\":{\"seconds\":\(parameters.seconds),\"runs\":\(parameters.runs),"
            + "\"connections\":\(parameters.connections),\"in_flight\":\(parameters.inFlight),"
            + "\"batch_connections\":\(parameters.batchConnections),\"batch_in_flight\":\(parameters.batchInFlight)},"
            + "\"medians\":[\(median.map(\.jsonObject).joined(separator: ","))],"
            + "\"runs\":[\(runs.joined(separator: ","))]}\n"
    }

    private func format(_ value: Double) -> String {
        String(format: "%.2f", value)
    }
}
