import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTestSupport
import RaveTransport
import Testing

@testable import Leaderboards

@Suite("Leaderboards over mutual TLS")
struct ServiceOverTLSTests {
    @Test("a player submits and reads ranks through the real runtime")
    func submitAndReadOverMutualTLS() async throws {
        let database = try await TestDatabase.create()
        let directory = try ServiceUnderTest.makeCertificates(for: "leaderboards", peers: ["gateway", "social"])
        // Social and identity stand in on one port; the service reaches them with its production wiring.
        let peers = try PeerHarness(certificates: directory)
        let service = try await ServiceUnderTest.start(
            "leaderboards", certificates: directory, databaseURL: database.url,
            migrations: .directory(LeaderboardsMain.migrationsDirectory),
            environment: [
                "RAVE_LEADERBOARDS_SOCIAL_ADDRESS": "127.0.0.1:\(peers.port)",
                "RAVE_LEADERBOARDS_IDENTITY_ADDRESS": "127.0.0.1:\(peers.port)",
            ]
        ) { context in
            try await LeaderboardsMain.services(context: context)
        }
        let connection = try service.client(as: "gateway")
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
        try await service.stop()
        await peers.shutdown()
        try await database.drop()
    }
}
