import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real `leaderboards` executable killed with SIGKILL in the middle of submits: every acknowledged score is in
/// the table, and the restarted process's index ranks exactly what the table holds.
@Suite("Leaderboards crash recovery", .timeLimit(.minutes(3)))
struct CrashRecoveryTests {
    @Test("acknowledged submits survive kill -9 and the rebuilt index equals the table")
    func acknowledgedSubmitsSurviveKill() async throws {
        let database = try await TestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-lb-crash-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["leaderboards", "gateway"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tls = try TLSContext(
            .client(
                trustRootsPath: "\(directory)/ca.pem", certificateChainPath: "\(directory)/gateway.pem",
                privateKeyPath: "\(directory)/gateway-key.pem"))
        let app = uniqueApp()

        let first = try LeaderboardsProcess(databaseURL: database.url, certificates: directory)
        let connection = try await first.connect(tls: tls)
        _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: connection).defineLeaderboard(
            LeaderboardsV1.DefineLeaderboardRequest(
                appId: app, definition: LeaderboardsV1.LeaderboardDefinition(key: "crash", name: "Crash", active: true)),
            options: Self.options(user: "", app: app, scopes: "admin"))

        // 32 writers, each raising the scores of its own 8 players; what was acknowledged is remembered per player.
        let acknowledged = Acknowledgements()
        let client = LeaderboardsV1.LeaderboardsClient(caller: connection)
        let writers = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<32 {
                    group.addTask {
                        let players = (0..<8).map { _ in RaveID.random() }
                        var score: Int64 = 0
                        while true {
                            score += 1
                            let player = players[Int(score) % players.count]
                            do {
                                _ = try await client.submitScore(
                                    LeaderboardsV1.SubmitScoreRequest(leaderboardKey: "crash", score: score),
                                    options: Self.options(user: player.hex, app: app, scopes: "player authenticated"))
                                acknowledged.record(score, for: player)
                            } catch {
                                return
                            }
                        }
                    }
                }
            }
        }
        // Kill once enough submits were acknowledged that many batches were committed and more are in flight.
        for _ in 0..<600 where acknowledged.count < 3_000 {
            try await Task.sleep(for: .milliseconds(50))
        }
        first.kill()
        await writers.value
        connection.close()
        let acknowledgedScores = acknowledged.scores
        #expect(acknowledged.count >= 3_000)

        let pool = try database.makePool(size: 2)
        let rows = try await pool.query(
            "SELECT user_id, score FROM scores s JOIN leaderboards l USING (board_id) WHERE l.app_id = $1", [app])
        var stored: [RaveID: Int64] = [:]
        for row in rows { stored[try row.decode(RaveID.self, at: 0)] = try row.decode(Int64.self, at: 1) }
        for (player, score) in acknowledgedScores {
            #expect(
                (stored[player] ?? -1) >= score,
                "acknowledged \(score) for \(player.hex), stored \(stored[player] ?? -1)")
        }

        // The restarted process loads the board from the table: its ranking must be the table's, row for row.
        let second = try LeaderboardsProcess(databaseURL: database.url, certificates: directory)
        let again = try await second.connect(tls: tls)
        var ranked: [(String, Int64, Int64)] = []
        var page: Int32 = 1
        while true {
            let response = try await LeaderboardsV1.LeaderboardsClient(caller: again).getGlobalScores(
                LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "crash", page: page, pageSize: 200),
                options: Self.options(user: "", app: app, scopes: "player"))
            ranked += response.scores.map { ($0.userId, $0.score, $0.position) }
            if response.scores.count < 200 { break }
            page += 1
        }
        let table = try await pool.query(
            """
            SELECT user_id, score FROM scores s JOIN leaderboards l USING (board_id) WHERE l.app_id = $1
            ORDER BY score DESC, achieved_at, user_id
            """, [app])
        #expect(ranked.count == table.count)
        for (offset, row) in table.enumerated() where offset < ranked.count {
            let expected = (try row.decode(RaveID.self, at: 0).hex, try row.decode(Int64.self, at: 1))
            #expect(ranked[offset].0 == expected.0 && ranked[offset].1 == expected.1)
            #expect(ranked[offset].2 == Int64(offset + 1))
        }
        again.close()
        await second.stop()
        pool.shutdown()
        try await database.drop()
    }

    static func options(user: String, app: String, scopes: String) -> CallOptions {
        CallOptions(
            timeout: .seconds(10),
            metadata: [MetadataKey.callerUserID: user, MetadataKey.callerAppID: app, MetadataKey.callerScopes: scopes])
    }
}

/// The best acknowledged score per player, written by many submitting tasks.
final class Acknowledgements: Sendable {
    private let best = Mutex<[RaveID: Int64]>([:])
    private let total = Atomic<Int>(0)

    func record(_ score: Int64, for player: RaveID) {
        best.withLock { $0[player] = max($0[player] ?? 0, score) }
        total.add(1, ordering: .relaxed)
    }

    var scores: [RaveID: Int64] { best.withLock { $0 } }
    var count: Int { total.load(ordering: .relaxed) }
}

/// The `leaderboards` executable built next to the test bundle, on free ports, without social and identity.
final class LeaderboardsProcess: Sendable {
    private let process: ChildProcess
    let port: Int
    private let logPath: String

    init(databaseURL: String, certificates: String) throws {
        let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        port = try LoopbackPort.unused()
        logPath = FileManager.default.temporaryDirectory.appendingPathComponent("rave-lb-\(UUID()).log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process = try ChildProcess.start(
            directory.appendingPathComponent("leaderboards").path,
            environment: ChildProcess.environment(adding: [
                "RAVE_DATABASE_URL": databaseURL, "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:\(port)",
                "RAVE_ADMIN_LISTEN": "127.0.0.1:\(try LoopbackPort.unused())", "RAVE_LOG_LEVEL": "warning",
                "RAVE_LEADERBOARDS_SOCIAL_ADDRESS": "off", "RAVE_LEADERBOARDS_IDENTITY_ADDRESS": "off",
                // A stable address, as a StatefulSet pod's: the restarted process takes the killed one's boards at once.
                "RAVE_LEADERBOARDS_ADVERTISE_ADDRESS": "leaderboards-0.leaderboards:7503",
            ]), errors: .file(logPath))
    }

    /// Connects once the process accepts calls (it loads its indexes first); fails after 60 s with its log.
    func connect(tls: TLSContext) async throws -> RPCClient {
        for _ in 0..<600 {
            if !process.isRunning { break }
            if let probe = try? await RPCConnection.connect(
                host: "127.0.0.1", port: port, tls: tls, group: TestDatabase.group)
            {
                probe.close()
                return RPCClient(host: "127.0.0.1", port: port, tls: tls, group: TestDatabase.group)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        throw RPCError.unavailable("leaderboards did not start; log:\n\(log)")
    }

    /// SIGKILL: no drain, no flush, exactly as a crash.
    func kill() {
        process.kill()
        try? FileManager.default.removeItem(atPath: logPath)
    }

    /// SIGTERM and wait for the drain.
    func stop() async {
        process.signal(SIGTERM)
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        try? FileManager.default.removeItem(atPath: logPath)
    }
}
