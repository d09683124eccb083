import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

/// Two leaderboards replicas on one database behind one gateway: each board has one owner (a lease row), every
/// player call reaches it through the gateway, and when the owner drains the other replica takes the board over
/// with the same ranking (docs/leaderboards.md "Scale-out", docs/gateway.md "Routing").
@Suite("System: leaderboards replicas and routing by board", .timeLimit(.minutes(3)))
struct BoardRoutingStoryTests {
    @Test func callsReachEachBoardsOwnerAndSurviveAHandover() async throws {
        try await SystemStack.with(leaderboardsReplicas: 2) { stack in
            let appID = try await stack.makeApplication()
            let admin = LeaderboardsV1.LeaderboardsAdminClient(caller: stack.admin)
            let boards = ["race", "arena", "puzzle"]
            for (index, key) in boards.enumerated() {
                _ = try await admin.defineLeaderboard(
                    .init(
                        appId: appID,
                        definition: .init(key: key, name: key.capitalized, sorter: Int32(index + 1), active: true)))
            }
            var players: [PlayerSession] = []
            for name in ["Ana", "Bo", "Cy", "Di"] { players.append(try await stack.signUp(appID: appID, name: name)) }
            for (index, player) in players.enumerated() {
                for (offset, key) in boards.enumerated() {
                    let response = try await player.leaderboards.submitScore(
                        .init(leaderboardKey: key, score: Int64(100 * (index + 1) + offset)))
                    #expect(response.newBest)
                }
            }
            // Every board has one lease, held by one of the two replicas.
            let replicas = ["leaderboards", "leaderboards-2"].compactMap { name in
                stack.ports[name].map { (name: name, address: "127.0.0.1:\($0.rpc)") }
            }
            let owners = try await leaseOwners(stack, appID: appID)
            #expect(Set(owners.keys) == Set(boards))
            #expect(owners.values.allSatisfy { owner in replicas.contains { $0.address == owner } })

            // Each board's ranking through the gateway, read by every player: whichever replica the gateway picks
            // first, the call answers from the owner's index.
            let expected = players.reversed().map(\.userID)
            for key in boards {
                for player in players {
                    let page = try await player.leaderboards.getGlobalScores(
                        .init(leaderboardKey: key, page: 1, pageSize: 10))
                    #expect(page.scores.map(\.userId) == expected, "board \(key)")
                }
            }

            // The owner of "race" drains (a rolling update): it releases its leases, the other replica takes the
            // board on the next call, loads it from the table, and the ranking is unchanged.
            let raceOwner = try #require(owners["race"])
            let drained = try #require(replicas.first { $0.address == raceOwner })
            let survivor = try #require(replicas.first { $0.address != raceOwner })
            stack.processes[drained.name]?.terminate()
            // Every board the drained replica held (it may have held more than "race") moves to the survivor: at
            // once when its leases were released, at the latest when they expire (15 s).
            for key in boards {
                try await eventually("the other replica serves \(key)") {
                    let page = try? await players[0].leaderboards.getGlobalScores(
                        .init(leaderboardKey: key, page: 1, pageSize: 10))
                    return page?.scores.map(\.userId) == expected
                }
            }
            #expect(try await leaseOwners(stack, appID: appID)["race"] == survivor.address)
            // And it takes new scores: the first player moves to the top of "race".
            let best = try await players[0].leaderboards.submitScore(.init(leaderboardKey: "race", score: 10_000))
            #expect(best.globalPosition == 1)
            for key in boards {
                let page = try await players[1].leaderboards.getGlobalScores(
                    .init(leaderboardKey: key, page: 1, pageSize: 10))
                #expect(page.scores.first?.userId == (key == "race" ? players[0].userID : players[3].userID))
            }
        }
    }

    /// Board key → owner address of the app's unexpired leases, read from the leaderboards database.
    private func leaseOwners(_ stack: SystemStack, appID: String) async throws -> [String: String] {
        let connection = try await stack.connect(to: "leaderboards")
        defer { connection.close() }
        let rows = try await connection.query(
            PostgresQuery(
                """
                SELECT leaderboard_key, owner_address FROM board_leases
                WHERE app_id = $1 AND expires_at > now()
                """, [appID]))
        var owners: [String: String] = [:]
        for row in rows {
            owners[try row.decode(String.self, column: "leaderboard_key")] = try row.decode(
                String.self, column: "owner_address")
        }
        return owners
    }
}
