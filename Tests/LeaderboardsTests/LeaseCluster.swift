import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

@testable import Leaderboards

#if canImport(Glibc)
import Glibc
#endif

/// Several leaderboards instances (real runtimes over mTLS, in this process) on one fresh database, each
/// advertising its own address, as replicas behind the gateway would.
final class LeaseCluster: Sendable {
    let database: TestDatabase
    let pool: PostgresPool
    let certificates: String
    let tls: TLSContext
    private let instances = Mutex<[LeaseInstance]>([])

    private init(database: TestDatabase, pool: PostgresPool, certificates: String) throws {
        self.database = database
        self.pool = pool
        self.certificates = certificates
        tls = try TLSContext(
            .client(
                trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/gateway.pem",
                privateKeyPath: "\(certificates)/gateway-key.pem"))
    }

    /// Runs `body` with a cluster, then stops every instance and drops the database whether `body` threw or not.
    static func with(_ body: (LeaseCluster) async throws -> Void) async throws {
        let database = try await TestDatabase.create()
        let certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-lb-lease-\(UUID())")
            .path
        try DevelopmentCertificates.write(to: certificates, services: ["leaderboards", "gateway"])
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        let pool = try database.makePool(size: 2)
        let cluster = try LeaseCluster(database: database, pool: pool, certificates: certificates)
        var failure: (any Error)?
        do {
            try await body(cluster)
        } catch {
            failure = error
        }
        for instance in cluster.instances.withLock({ $0 }) { await instance.stop() }
        pool.shutdown()
        try? await database.drop()
        if let failure { throw failure }
    }

    /// Starts one more instance and waits until it serves.
    ///
    /// The instance must know its address before it binds (it advertises it in its leases), so the port is
    /// picked first; another process may take it meanwhile (any outgoing connection can get it as its ephemeral
    /// port), so a start that finds the port taken tries another.
    func start(leaseSeconds: Int = 15) async throws -> LeaseInstance {
        var attempts = 0
        while true {
            let port = try LoopbackPort.unused()
            do {
                return try await start(port: port, leaseSeconds: leaseSeconds)
            } catch  where attempts < 4 && "\(error)".contains("errno 98") {
                attempts += 1
            }
        }
    }

    private func start(port: Int, leaseSeconds: Int) async throws -> LeaseInstance {
        let environment = [
            "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:\(port)", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
            "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "2s",
            "RAVE_DATABASE_URL": database.url, "RAVE_DB_POOL_SIZE": "4",
            "RAVE_LEADERBOARDS_SOCIAL_ADDRESS": "off", "RAVE_LEADERBOARDS_IDENTITY_ADDRESS": "off",
            "RAVE_LEADERBOARDS_LEASE_SECONDS": "\(leaseSeconds)",
        ]
        let runtime = try await ServiceRuntime.start(
            name: "leaderboards", environment: environment,
            migrations: .directory(LeaderboardsMain.migrationsDirectory)
        ) { context in
            try await LeaderboardsMain.services(context: context)
        }
        let instance = LeaseInstance(
            runtime: runtime, address: "127.0.0.1:\(port)", cluster: self,
            connection: RPCClient(host: "127.0.0.1", port: port, tls: tls, group: TestDatabase.group))
        instances.withLock { $0.append(instance) }
        return instance
    }

    /// Call options as the gateway sets them; no retries, so a refusal reaches the test as it was sent.
    func options(user: String = "", app: String = "", scopes: String = "") -> CallOptions {
        CallOptions(
            timeout: .seconds(10),
            metadata: [MetadataKey.callerUserID: user, MetadataKey.callerAppID: app, MetadataKey.callerScopes: scopes],
            maxRetries: 0)
    }
}

/// One running instance of a `LeaseCluster`.
final class LeaseInstance: Sendable {
    let address: String
    let connection: RPCClient
    private let runtime: ServiceRuntime
    private let cluster: LeaseCluster
    private let running: Task<Void, any Error>

    init(runtime: ServiceRuntime, address: String, cluster: LeaseCluster, connection: RPCClient) {
        self.runtime = runtime
        self.address = address
        self.cluster = cluster
        self.connection = connection
        running = Task { try await runtime.run() }
    }

    /// A graceful stop (SIGTERM): drain, then release the leases; returns once the runtime has stopped.
    func stop() async {
        connection.close()
        runtime.triggerShutdown()
        _ = try? await running.value
    }

    func define(_ key: String, app: String) async throws {
        _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: connection).defineLeaderboard(
            LeaderboardsV1.DefineLeaderboardRequest(
                appId: app, definition: LeaderboardsV1.LeaderboardDefinition(key: key, name: key, active: true)),
            options: cluster.options(app: app, scopes: "admin"))
    }

    func submit(
        _ score: Int64, player: RaveID, board: String, app: String
    ) async throws -> LeaderboardsV1.SubmitScoreResponse {
        try await LeaderboardsV1.LeaderboardsClient(caller: connection).submitScore(
            LeaderboardsV1.SubmitScoreRequest(leaderboardKey: board, score: score),
            options: cluster.options(user: player.hex, app: app))
    }

    /// The first page in rank order.
    func ranks(board: String, app: String) async throws -> [RankRow] {
        let page = try await LeaderboardsV1.LeaderboardsClient(caller: connection).getGlobalScores(
            LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: board, page: 1, pageSize: 100),
            options: cluster.options(user: RaveID.random().hex, app: app))
        return page.scores.map { RankRow(player: $0.userId, score: $0.score, position: $0.position) }
    }
}

/// One row of a page, compared whole between instances.
struct RankRow: Hashable {
    var player: String
    var score: Int64
    var position: Int64
}
