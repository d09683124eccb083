import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Social

@Suite("Blocks")
struct BlockTests {
    @Test func blockingRemovesEveryRelationshipAndRequestInEveryList() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let carol = try await harness.makePlayer("Carol")
            _ = try await harness.admin.createList(
                .init(appId: harness.appID, key: "team", kind: .friends, scope: .global),
                context: SocialHarness.adminContext)
            // Friends in two lists, follows both ways in two lists, and a pending request in a third.
            for key in ["friends", "global_friends"] {
                _ = try await harness.player.sendFriendRequest(
                    .init(listKey: key, target: byID(bob)), context: alice.context)
                _ = try await harness.player.acceptFriendRequest(
                    .init(listKey: key, userId: alice.id), context: bob.context)
            }
            for key in ["followers", "global_followers"] {
                _ = try await harness.player.follow(.init(listKey: key, target: byID(bob)), context: alice.context)
                _ = try await harness.player.follow(.init(listKey: key, target: byID(alice)), context: bob.context)
            }
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "team", target: byID(alice)), context: bob.context)
            // Carol's relationships with both must survive.
            _ = try await harness.player.follow(
                .init(listKey: "followers", target: byID(alice)), context: carol.context)

            _ = try await harness.player.blockUser(.init(target: byID(bob)), context: alice.context)

            for key in ["friends", "global_friends"] {
                let friends = try await harness.player.queryFriends(
                    .init(query: .init(listKey: key)), context: bob.context)
                #expect(friends.page?.users.isEmpty == true && friends.page?.totalCount == 0)
            }
            for key in ["followers", "global_followers"] {
                let counts = try await harness.player.getRelationshipCounts(.init(listKey: key), context: alice.context)
                #expect(counts.following == 0)
                #expect(counts.followers == (key == "followers" ? 1 : 0))
                let bobCounts = try await harness.player.getRelationshipCounts(
                    .init(listKey: key), context: bob.context)
                #expect(bobCounts.following == 0 && bobCounts.followers == 0)
            }
            let pending = try await harness.player.listFriendRequests(
                .init(listKey: "team", direction: .incoming), context: alice.context)
            #expect(pending.users.isEmpty)

            let blocked = try await harness.internalHandlers.isBlocked(
                .init(userId: bob.id, otherUserId: alice.id), context: SocialHarness.serviceContext)
            #expect(blocked.blocked && blocked.otherBlockedUser && !blocked.userBlockedOther)
            // Neither may approach the other while the block stands.
            for (from, to) in [(alice, bob), (bob, alice)] {
                let request = await statusCode {
                    _ = try await harness.player.sendFriendRequest(
                        .init(listKey: "friends", target: byID(to)), context: from.context)
                }
                #expect(request == .permissionDenied)
                let follow = await statusCode {
                    _ = try await harness.player.follow(
                        .init(listKey: "followers", target: byID(to)), context: from.context)
                }
                #expect(follow == .permissionDenied)
            }
            let list = try await harness.player.listBlockedUsers(.init(), context: alice.context)
            #expect(list.users.map(\.userId) == [bob.id] && list.users.first?.displayName == "Bob")

            _ = try await harness.player.unblockUser(.init(userId: bob.id), context: alice.context)
            let after = try await harness.internalHandlers.isBlocked(
                .init(userId: alice.id, otherUserId: bob.id), context: SocialHarness.serviceContext)
            #expect(!after.blocked)
            let unblockAgain = await statusCode {
                _ = try await harness.player.unblockUser(.init(userId: bob.id), context: alice.context)
            }
            #expect(unblockAgain == .notFound)
        }
    }
}
