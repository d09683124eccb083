import Foundation
import RavePostgres
import RaveRPC
import RaveTestSupport
import RaveTransport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway Rave Backend for one test, reached only through its gateway.
///
/// Every built service executable runs on free loopback ports, each with a fresh database on
/// the RAVE_TEST_POSTGRES_URL server, development certificates, local OIDC issuers and a fake APNs, configured the
/// way deploy/local/run.sh configures `make run`. Stories reach it only through `gatewayPort`.
final class SystemStack: @unchecked Sendable {
    // @unchecked: every property is set in init and never replaced; StackProcess and the atomic guard their own
    // state.
    static let group: EventLoopGroup = {
        do {
            return try EventLoopGroup(loopCount: 2)
        } catch {
            preconditionFailure("cannot start the test event loops: \(error)")
        }
    }()

    /// The data-owning services, in start order; gifts joins once its executable has been built.
    static let dataServices = ["identity", "social", "leaderboards", "gifts", "push", "wallet"]
    /// Services that serve rave.events.v1.EventSink, so every publisher delivers to them.
    static let eventSinks = ["gifts", "push"]
    /// Services identity calls with MergeUsers.
    static let mergeParticipants = ["social", "leaderboards", "gifts", "push", "wallet"]

    let directory: URL
    let certificates: String
    let providers: TestIdentityProviders
    let apns: FakeAPNs
    /// The SMTP server identity sends its mails to (verification and reset codes).
    let mail: SMTPSink
    /// Protocol and admin ports per process name ("gateway" included).
    let ports: [String: (rpc: Int, admin: Int)]
    /// Each data service's database URL.
    let databases: [String: String]
    private let databaseNames: [String]
    let processes: [String: StackProcess]
    /// A player's connection to the gateway: server-authenticated TLS, no client certificate.
    let gateway: RPCClient
    /// An operator's connection to the gateway, with the admin client certificate.
    let admin: RPCClient

    /// Set when a failure's message points at the logs, so tearing down leaves them.
    private let keepsLogs = Atomic<Bool>(false)

    var gatewayPort: Int { ports["gateway"]?.rpc ?? 0 }
    var services: [String] { Self.dataServices.filter { processes[$0] != nil } }
    var hasGifts: Bool { processes["gifts"] != nil }

    /// Starts a stack, waits until every process is ready, runs `body`, and tears everything down (kill -9, drop
    /// the databases) whether `body` succeeded or not.
    ///
    /// `leaderboardsReplicas` > 1 adds processes "leaderboards-2", … running the leaderboards executable on the
    /// same database, each advertising its own address, all behind the one gateway (board ownership by lease).
    /// `gatewayMergeCacheTTL` is how long the gateway keeps a token subject's merge resolution (1 s unless a story
    /// needs the production default, 30 s).
    /// How many stacks run at once (`RAVE_SYSTEM_STACKS`, default 6): Swift Testing starts every story at once, and
    /// thirty stacks of seven processes starting together on two cores made calls outlast their deadlines.
    static let slots = TestSlots(
        capacity: ProcessInfo.processInfo.environment["RAVE_SYSTEM_STACKS"].flatMap(Int.init).map { max(1, $0) } ?? 6)

    static func with(
        leaderboardsReplicas: Int = 1, gatewayMergeCacheTTL: String = "1s", _ body: (SystemStack) async throws -> Void
    ) async throws {
        await slots.acquire()
        do {
            try await running(
                leaderboardsReplicas: leaderboardsReplicas, gatewayMergeCacheTTL: gatewayMergeCacheTTL, body)
        } catch {
            await slots.release()
            throw error
        }
        await slots.release()
    }

    private static func running(
        leaderboardsReplicas: Int, gatewayMergeCacheTTL: String, _ body: (SystemStack) async throws -> Void
    ) async throws {
        let stack = try await SystemStack(
            leaderboardsReplicas: leaderboardsReplicas, gatewayMergeCacheTTL: gatewayMergeCacheTTL)
        var failure: (any Error)?
        do {
            try await stack.startAll()
            try await body(stack)
        } catch {
            failure = stack.explained(error)
        }
        await stack.tearDown()
        if let failure { throw failure }
    }

    /// `error`, with the stack's ports and what became of every process that is no longer running (a story's
    /// call failing with "connection refused" says little on its own), and with the logs kept.
    private func explained(_ error: any Error) -> any Error {
        let stopped = processes.filter { !$0.value.isRunning }.sorted { $0.key < $1.key }
        var lines = ["\(error)", "stack ports (logs in \(directory.path)):"]
        for (name, port) in ports.sorted(by: { $0.key < $1.key }) {
            lines.append("- \(name): rpc \(port.rpc), admin \(port.admin)")
        }
        for (name, process) in stopped {
            lines.append("\(name) stopped: \(process.exitDescription)")
            lines.append(process.logTail(10))
        }
        keepsLogs.store(true, ordering: .relaxed)
        return StackError(lines.joined(separator: "\n"))
    }

    private init(leaderboardsReplicas: Int, gatewayMergeCacheTTL: String) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-system-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        certificates = directory.appendingPathComponent("certs").path
        try DevelopmentCertificates.write(to: certificates)
        providers = try TestIdentityProviders(directory: directory)
        apns = try FakeAPNs(directory: directory)
        mail = try SMTPSink()
        let secretKeyFile = try SecretKeyFile.write(in: directory.path)

        let names = Self.dataServices.filter(StackProcess.isBuilt)
        let replicas = leaderboardsReplicas > 1 ? (2...leaderboardsReplicas).map { "leaderboards-\($0)" } : []
        var ports: [String: (rpc: Int, admin: Int)] = [:]
        for name in names + replicas + ["gateway"] {
            ports[name] = (try LoopbackPort.unused(), try LoopbackPort.unused())
        }
        self.ports = ports
        var databases: [String: String] = [:]
        var databaseNames: [String] = []
        for name in names {
            let database = try await ScratchDatabase.create(prefix: "rave_system_\(name)_")
            databases[name] = database.url
            databaseNames.append(database.name)
        }
        self.databases = databases
        self.databaseNames = databaseNames

        func address(_ name: String) -> String { "127.0.0.1:\(ports[name]?.rpc ?? 0)" }
        func list(_ names: [String]) -> String {
            names.filter { ports[$0] != nil }.map { "\($0)=\(address($0))" }.joined(separator: ",")
        }
        let logs = directory.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        var processes: [String: StackProcess] = [:]
        for name in names + replicas + ["gateway"] {
            let service = replicas.contains(name) ? "leaderboards" : name
            var environment = [
                "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": address(name),
                "RAVE_ADMIN_LISTEN": "127.0.0.1:\(ports[name]?.admin ?? 0)", "RAVE_EVENT_LOOPS": "1",
                "RAVE_LOG_LEVEL": "notice", "RAVE_SHUTDOWN_GRACE": "1s",
            ]
            if let database = databases[service] {
                environment["RAVE_DATABASE_URL"] = database
                environment["RAVE_DB_POOL_SIZE"] = "4"
                environment["RAVE_EVENT_SINKS"] = list(Self.eventSinks.filter { $0 != service })
            }
            for peer in ["identity", "social", "push"] where peer != service && service != "gateway" {
                environment["RAVE_\(service.uppercased())_\(peer.uppercased())_ADDRESS"] = address(peer)
            }
            switch service {
            case "identity":
                environment["RAVE_IDENTITY_MERGE_PARTICIPANTS"] = list(Self.mergeParticipants)
                environment["RAVE_SECRET_KEY_FILE"] = secretKeyFile
                environment.merge(providers.identityEnvironment) { $1 }
                environment["RAVE_IDENTITY_SMTP_URL"] = mail.url
                environment["RAVE_IDENTITY_SMTP_FROM"] = "no-reply@rave.test"
            case "push":
                environment.merge(apns.pushEnvironment) { $1 }
            case "gateway":
                for service in names {
                    let replicaAddresses = service == "leaderboards" ? replicas.map(address) : []
                    environment["RAVE_GATEWAY_\(service.uppercased())_ADDRESSES"] =
                        ([address(service)] + replicaAddresses).joined(separator: ",")
                }
                environment["RAVE_GATEWAY_HEALTH_INTERVAL"] = "500ms"
                // Stacks run side by side: the HTTP front door's fixed default port would collide.
                environment["RAVE_GATEWAY_HTTP_LISTEN"] = ""
                environment["RAVE_GATEWAY_MERGE_CACHE_TTL"] = gatewayMergeCacheTTL
            default:
                break
            }
            processes[name] = StackProcess(
                name: name, executable: service, environment: environment, adminPort: ports[name]?.admin ?? 0,
                logDirectory: logs)
        }
        self.processes = processes
        let gatewayPort = ports["gateway"]?.rpc ?? 0
        gateway = RPCClient(
            host: "127.0.0.1", port: gatewayPort,
            tls: try TLSContext(.client(trustRootsPath: "\(certificates)/ca.pem")), group: Self.group)
        admin = RPCClient(
            host: "127.0.0.1", port: gatewayPort,
            tls: try TLSContext(
                .client(
                    trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/admin.pem",
                    privateKeyPath: "\(certificates)/admin-key.pem")),
            group: Self.group)
    }

    /// Starts the services, then the gateway once they serve, as a deployment's start order would: a gateway
    /// that finds its backends refusing connections marks them unhealthy and its clients back off before
    /// reconnecting, so the first calls of a test would see UNAVAILABLE for a while.
    private func startAll() async throws {
        let services = processes.filter { $0.key != "gateway" }.values
        for process in services { try process.start() }
        for process in services { try await process.waitUntilReady() }
        guard let gateway = processes["gateway"] else { return }
        try gateway.start()
        try await gateway.waitUntilReady()
    }

    /// Kills `name` with SIGKILL and starts it again after `pause`, as a supervisor would; returns once it is ready.
    func restart(_ name: String, pause: Duration = .zero) async throws {
        guard let process = processes[name] else { throw StackError("no process named \(name)") }
        process.kill()
        try await Task.sleep(for: pause)
        try process.start()
        try await process.waitUntilReady()
    }

    private func tearDown() async {
        gateway.close()
        admin.close()
        for process in processes.values { process.kill() }
        apns.stop()
        mail.stop()
        for name in databaseNames { await ScratchDatabase.drop(name) }
        if !keepsLogs.load(ordering: .relaxed) && ProcessInfo.processInfo.environment["RAVE_SYSTEM_KEEP_LOGS"] == nil {
            try? FileManager.default.removeItem(at: directory)
        } else {
            print("system test logs kept in \(directory.path)")
        }
    }

    // MARK: - Databases

    /// How many player balances differ from the signed sum of their account's transfers (wallet migration 0003:
    /// one row per movement, -amount from `from_account`, +amount to `to_account`) or are negative.
    func walletBalancesOutOfLine() async throws -> Int64 {
        let database = try await connect(to: "wallet")
        defer { database.close() }
        let rows = try await database.query(
            PostgresQuery(
                """
                SELECT count(*) AS wrong FROM accounts a
                LEFT JOIN (
                    SELECT account_id, sum(amount) AS total FROM (
                        SELECT from_account, -amount FROM transfers UNION ALL SELECT to_account, amount FROM transfers
                    ) AS side (account_id, amount) GROUP BY account_id
                ) s USING (account_id)
                WHERE a.balance IS NOT NULL AND (a.balance <> coalesce(s.total, 0) OR a.balance < 0)
                """))
        return try rows[0].decode(Int64.self, column: "wrong")
    }

    /// A connection to one service's database, for checks no client can make (the ledger sums to zero).
    func connect(to service: String) async throws -> PostgresConnection {
        guard let url = databases[service] else { throw StackError("no database for \(service)") }
        return try await PostgresConnection.connect(to: url, on: Self.group.next())
    }

}
