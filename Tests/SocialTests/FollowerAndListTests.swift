import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Social

@Suite("Followers and lists")
struct FollowerAndListTests {
    @Test func followingBackIsTwoRelationshipsNotAFriendship() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let first = try await harness.player.follow(
                .init(listKey: "followers", target: byID(bob)), context: alice.context)
            #expect(first.created)
            let repeated = try await harness.player.follow(
                .init(listKey: "followers", target: byID(bob)), context: alice.context)
            #expect(!repeated.created)
            _ = try await harness.player.follow(.init(listKey: "followers", target: byID(alice)), context: bob.context)

            let followers = try await harness.player.queryFollowers(
                .init(query: .init(listKey: "followers")), context: bob.context)
            #expect(followers.page?.users.map(\.userId) == [alice.id])
            let following = try await harness.player.queryFollowing(
                .init(query: .init(listKey: "followers")), context: bob.context)
            #expect(following.page?.users.map(\.userId) == [alice.id])
            let counts = try await harness.player.getRelationshipCounts(
                .init(listKey: "followers"), context: bob.context)
            #expect(counts.followers == 1 && counts.following == 1 && counts.friends == 0)
            let friends = try await harness.internalHandlers.friendIds(
                .init(userId: alice.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(friends.userIds.isEmpty)
            let followingIDs = try await harness.internalHandlers.followingIds(
                .init(userId: alice.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(followingIDs.userIds == [bob.id])

            _ = try await harness.player.unfollow(.init(listKey: "followers", userId: bob.id), context: alice.context)
            let after = try await harness.player.getRelationshipCounts(
                .init(listKey: "followers"), context: bob.context)
            #expect(after.followers == 0 && after.following == 1)
            let unfollowAgain = await statusCode {
                _ = try await harness.player.unfollow(
                    .init(listKey: "followers", userId: bob.id), context: alice.context)
            }
            #expect(unfollowAgain == .notFound)
        }
    }

    @Test func listsAreIndependentAndGlobalListsSpanThePublishersApps() async throws {
        try await SocialHarness.with { harness in
            let otherApp = try await harness.makeApplication()
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            _ = try await harness.player.follow(
                .init(listKey: "global_followers", target: byID(bob)), context: alice.context)
            let appList = try await harness.player.queryFollowers(
                .init(query: .init(listKey: "followers")), context: bob.context)
            #expect(appList.page?.users.isEmpty == true)
            // The same players signed in to another app of the publisher see the global list's relationship.
            let bobElsewhere = SocialHarness.Player(
                id: bob.id,
                context: SocialHarness.context(
                    caller: .init(userID: bob.id, appID: otherApp, sessionID: "", scopes: ["player"])))
            let global = try await harness.player.queryFollowers(
                .init(query: .init(listKey: "global_followers")), context: bobElsewhere.context)
            #expect(global.page?.users.map(\.userId) == [alice.id])
            let otherAppList = try await harness.player.queryFollowers(
                .init(query: .init(listKey: "followers")), context: bobElsewhere.context)
            #expect(otherAppList.page?.users.isEmpty == true)
        }
    }

    @Test func customListsAndTheirAccessRules() async throws {
        try await SocialHarness.with { harness in
            let created = try await harness.admin.createList(
                .init(appId: harness.appID, key: "guild", kind: .friends, scope: .application),
                context: SocialHarness.adminContext)
            #expect(created.list?.key == "guild" && created.list?.scope == .application)
            let duplicate = await statusCode {
                _ = try await harness.admin.createList(
                    .init(appId: harness.appID, key: "guild", kind: .followers, scope: .global),
                    context: SocialHarness.adminContext)
            }
            #expect(duplicate == .alreadyExists)
            let lists = try await harness.admin.getLists(
                .init(appId: harness.appID), context: SocialHarness.adminContext)
            #expect(
                Set(lists.lists.map(\.key)) == ["friends", "followers", "global_friends", "global_followers", "guild"])
            let notAdmin = await statusCode {
                _ = try await harness.admin.getLists(.init(appId: harness.appID), context: SocialHarness.serviceContext)
            }
            #expect(notAdmin == .unauthenticated || notAdmin == .permissionDenied)

            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "guild", target: byID(bob)), context: alice.context)
            let defaultList = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .incoming), context: bob.context)
            #expect(defaultList.users.isEmpty)

            let otherApp = try await harness.makeApplication()
            let foreign = SocialHarness.context(
                caller: .init(userID: alice.id, appID: otherApp, sessionID: "", scopes: []))
            let otherAppsList = await statusCode {
                _ = try await harness.player.queryFriends(.init(query: .init(listKey: "guild")), context: foreign)
            }
            #expect(otherAppsList == .permissionDenied)
            let unknownKey = await statusCode {
                _ = try await harness.player.queryFriends(
                    .init(query: .init(listKey: "no-such-list")), context: alice.context)
            }
            #expect(unknownKey == .notFound)
            let badKey = await statusCode {
                _ = try await harness.player.queryFriends(
                    .init(query: .init(listKey: "Bad Key!")), context: alice.context)
            }
            #expect(badKey == .invalidArgument)
            let wrongKind = await statusCode {
                _ = try await harness.player.follow(.init(listKey: "guild", target: byID(bob)), context: alice.context)
            }
            #expect(wrongKind == .failedPrecondition)
            let followOnFriends = await statusCode {
                _ = try await harness.player.follow(
                    .init(listKey: "friends", target: byID(bob)), context: alice.context)
            }
            #expect(followOnFriends == .failedPrecondition)
        }
    }
}
