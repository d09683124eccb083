import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Social

@Suite("Social operator reads")
struct AdminReadsTests {
    @Test func getUserCountsCountsEveryListTheAppSeesAndTheBlocks() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let carol = try await harness.makePlayer("Carol")
            let dave = try await harness.makePlayer("Dave")
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(bob)), context: alice.context)
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(alice)), context: bob.context)
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(alice)), context: carol.context)
            _ = try await harness.player.follow(
                .init(listKey: "followers", target: byID(alice)), context: carol.context)
            _ = try await harness.player.blockUser(.init(target: byID(dave)), context: alice.context)

            let counts = try await harness.admin.getUserCounts(
                .init(appId: harness.appID, userId: alice.id), context: SocialHarness.adminContext)
            #expect(counts.userId == alice.id)
            #expect(counts.blocked == 1)
            let byKey = Dictionary(uniqueKeysWithValues: counts.lists.map { ($0.listKey, $0) })
            #expect(Set(byKey.keys) == ["friends", "followers", "global_friends", "global_followers"])
            #expect(byKey["friends"]?.kind == .friends)
            #expect(byKey["friends"]?.friends == 1)
            #expect(byKey["friends"]?.incomingRequests == 1)
            #expect(byKey["friends"]?.outgoingRequests == 0)
            #expect(byKey["followers"]?.followers == 1)
            #expect(byKey["followers"]?.following == 0)
            #expect(byKey["global_friends"]?.friends == 0)

            let carolCounts = try await harness.admin.getUserCounts(
                .init(appId: harness.appID, userId: carol.id), context: SocialHarness.adminContext)
            let carolFriends = carolCounts.lists.first { $0.listKey == "friends" }
            #expect(carolFriends?.outgoingRequests == 1 && carolFriends?.friends == 0)
            #expect(carolCounts.lists.first { $0.listKey == "followers" }?.following == 1)
        }
    }

    @Test func getUserCountsRefusesBadIdsInOurWordsAndPlayers() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let badUser = await statusCode {
                _ = try await harness.admin.getUserCounts(
                    .init(appId: harness.appID, userId: "ALICE"), context: SocialHarness.adminContext)
            }
            #expect(badUser == .invalidArgument)
            let badApp = await statusCode {
                _ = try await harness.admin.getUserCounts(
                    .init(appId: "", userId: alice.id), context: SocialHarness.adminContext)
            }
            #expect(badApp == .invalidArgument)
            let player = await statusCode {
                _ = try await harness.admin.getUserCounts(
                    .init(appId: harness.appID, userId: alice.id), context: alice.context)
            }
            #expect(player == .permissionDenied)
        }
    }
}
