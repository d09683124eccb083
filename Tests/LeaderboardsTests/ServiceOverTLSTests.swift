import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTransport
import Testing

@testable import Leaderboards

@Suite("Leaderboards over mutual TLS")
struct ServiceOverTLSTests {
    @Test("a player submits and reads ranks through the real runtime")
    func submitAndReadOverMutualTLS() async throws {
        let database = try await TestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-lb-\(UUID())").path
        try DevelopmentCertificates.write(to: directory, services: ["leaderboards", "gateway", "social"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Social and identity stand in on one port; the service reaches them with its production wiring.
        let peers = try PeerHarness(certificates: directory)
        let environment = [
            "RAVE_CERT_DIR": directory, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
            "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "2s",
            "RAVE_DATABASE_URL": database.url,
            "RAVE_LEADERBOARDS_SOCIAL_ADDRESS": "127.0.0.1:\(peers.port)",
            "RAVE_LEADERBOARDS_IDENTITY_ADDRESS": "127.0.0.1:\(peers.port)",
        ]
        let runtime = try await ServiceRuntime.start(
            name: "leaderboards", environment: environment,
            migrations: .directory(LeaderboardsMain.migrationsDirectory)
        ) { context in
            try await LeaderboardsMain.services(context: context)
        }
        let running = Task { try await runtime.run() }
        let clientGroup = try EventLoopGroup(loopCount: 1)
        let tls = try TLSContext(
            .client(
                trustRootsPath: "\(directory)/ca.pem", certificateChainPath: "\(directory)/gateway.pem",
                privateKeyPath: "\(directory)/gateway-key.pem"))
        let connection = RPCClient(host: "127.0.0.1", port: runtime.rpcPort, tls: tls, group: clientGroup)
        let app = uniqueApp()
        let player = RaveID.random()
        peers.identity.setName("Player One", of: player)
        func options(user: String, scopes: String = "") -> CallOptions {
            CallOptions(
                timeout: .seconds(10),
                metadata: [
                    MetadataKey.callerUserID: user, MetadataKey.callerAppID: app, MetadataKey.callerScopes: scopes,
                ])
        }
        do {
            let admin = LeaderboardsV1.LeaderboardsAdminClient(caller: connection)
            _ = try await admin.defineLeaderboard(
                LeaderboardsV1.DefineLeaderboardRequest(
                    appId: app,
                    definition: LeaderboardsV1.LeaderboardDefinition(key: "points", name: "Points", active: true)),
                options: options(user: "", scopes: "admin"))
            let client = LeaderboardsV1.LeaderboardsClient(caller: connection)
            let submitted = try await client.submitScore(
                LeaderboardsV1.SubmitScoreRequest(leaderboardKey: "points", score: 42),
                options: options(user: player.hex))
            #expect(submitted.newBest && submitted.globalPosition == 1)
            let page = try await client.getGlobalScores(
                LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "points", page: 1, pageSize: 10),
                options: options(user: player.hex))
            #expect(page.scores.map(\.userId) == [player.hex])
            #expect(page.scores.map(\.displayName) == ["Player One"])
            let friends = try await client.getFriendsScores(
                LeaderboardsV1.GetFriendsScoresRequest(leaderboardKey: "points", page: 1, pageSize: 10),
                options: options(user: player.hex))
            #expect(friends.scores.map(\.userId) == [player.hex])
            await #expect {
                _ = try await client.getGlobalScores(
                    LeaderboardsV1.GetGlobalScoresRequest(leaderboardKey: "points", page: 1, pageSize: 0),
                    options: options(user: player.hex))
            } throws: { error in
                (error as? RPCError)?.code == .invalidArgument
            }
        } catch {
            Issue.record("call failed: \(error)")
        }
        connection.close()
        runtime.triggerShutdown()
        try await running.value
        clientGroup.shutdown()
        await peers.shutdown()
        try await database.drop()
    }
}
