import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Social

@Suite("Merge")
struct MergeTests {
    @Test func mergeUnitesGraphsWithoutSelfOrDuplicatesAndBlocksWin() async throws {
        try await SocialHarness.with { harness in
            let source = try await harness.makePlayer("Source")
            let target = try await harness.makePlayer("Target")
            let shared = try await harness.makePlayer("Shared")
            let onlySource = try await harness.makePlayer("OnlySource")
            let blockedByTarget = try await harness.makePlayer("Blocked")
            let requester = try await harness.makePlayer("Requester")
            func befriend(_ a: SocialHarness.Player, _ b: SocialHarness.Player) async throws {
                _ = try await harness.player.sendFriendRequest(
                    .init(listKey: "friends", target: byID(b)), context: a.context)
                _ = try await harness.player.acceptFriendRequest(
                    .init(listKey: "friends", userId: a.id), context: b.context)
            }
            try await befriend(source, target)
            try await befriend(source, shared)
            try await befriend(target, shared)
            try await befriend(source, onlySource)
            try await befriend(source, blockedByTarget)
            _ = try await harness.player.follow(
                .init(listKey: "followers", target: byID(shared)), context: source.context)
            _ = try await harness.player.follow(
                .init(listKey: "followers", target: byID(source)), context: onlySource.context)
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(source)), context: requester.context)
            _ = try await harness.player.blockUser(.init(target: byID(blockedByTarget)), context: target.context)
            _ = try await harness.player.addContactByEmail(.init(email: "friend@example.test"), context: source.context)
            let sourceName = try await harness.username(of: source)
            _ = try await harness.player.addContactsByUsername(.init(usernames: [sourceName]), context: shared.context)

            let request = MergeV1.MergeUsersRequest(
                mergeId: "merge-1", sourceUserId: source.id, targetUserId: target.id)
            let first = try await harness.merge.mergeUsers(request, context: SocialHarness.serviceContext)
            #expect(!first.alreadyApplied)

            let friends = try await harness.internalHandlers.friendIds(
                .init(userId: target.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(Set(friends.userIds) == [shared.id, onlySource.id])
            let page = try await harness.player.queryFriends(
                .init(query: .init(listKey: "friends")), context: target.context)
            #expect(page.page?.totalCount == 2)
            let sharedFriends = try await harness.internalHandlers.friendIds(
                .init(userId: shared.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(sharedFriends.userIds == [target.id])
            let sharedCounts = try await harness.player.getRelationshipCounts(
                .init(listKey: "friends"), context: shared.context)
            #expect(sharedCounts.friends == 1)
            let blockedFriends = try await harness.internalHandlers.friendIds(
                .init(userId: blockedByTarget.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(blockedFriends.userIds.isEmpty)
            let following = try await harness.internalHandlers.followingIds(
                .init(userId: target.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(following.userIds == [shared.id])
            let followers = try await harness.player.getRelationshipCounts(
                .init(listKey: "followers"), context: target.context)
            #expect(followers.followers == 1 && followers.following == 1)
            let requests = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .incoming), context: target.context)
            #expect(requests.users.map(\.userId) == [requester.id])
            let contacts = try await harness.player.queryContacts(.init(), context: target.context)
            #expect(contacts.contacts.map(\.key) == ["phonebook:friend@example.test"])
            let sharedContacts = try await harness.player.queryContacts(.init(), context: shared.context)
            #expect(sharedContacts.contacts.map(\.userId) == [target.id])
            // The source's id is the target now: asked under it, the friends are the target's; no row names it.
            let underSource = try await harness.internalHandlers.friendIds(
                .init(userId: source.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(Set(underSource.userIds) == [shared.id, onlySource.id])
            #expect(try await harness.rows(of: source) == 0)

            let again = try await harness.merge.mergeUsers(request, context: SocialHarness.serviceContext)
            #expect(again.alreadyApplied)
            let selfMerge = await statusCode {
                _ = try await harness.merge.mergeUsers(
                    .init(mergeId: "merge-2", sourceUserId: target.id, targetUserId: target.id),
                    context: SocialHarness.serviceContext)
            }
            #expect(selfMerge == .invalidArgument)
        }
    }

    @Test func blocksOfTheSourceMoveToTheTarget() async throws {
        try await SocialHarness.with { harness in
            let source = try await harness.makePlayer("Source")
            let target = try await harness.makePlayer("Target")
            let pest = try await harness.makePlayer("Pest")
            _ = try await harness.player.follow(
                .init(listKey: "followers", target: byID(target)), context: pest.context)
            _ = try await harness.player.blockUser(.init(target: byID(pest)), context: source.context)
            _ = try await harness.merge.mergeUsers(
                .init(mergeId: "merge-blocks", sourceUserId: source.id, targetUserId: target.id),
                context: SocialHarness.serviceContext)
            let blocked = try await harness.internalHandlers.isBlocked(
                .init(userId: target.id, otherUserId: pest.id), context: SocialHarness.serviceContext)
            #expect(blocked.userBlockedOther)
            let counts = try await harness.player.getRelationshipCounts(
                .init(listKey: "followers"), context: target.context)
            #expect(counts.followers == 0)
        }
    }
}
