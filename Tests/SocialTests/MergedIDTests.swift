import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Social

/// A game keeps a merged-away player's token, and other services name players by old ids: every relationship made
/// or read that way is the target's.
@Suite("Social: calls naming a merged-away player")
struct SocialMergedIDTests {
    @Test("friends, follows and blocks made under the old id after the merge are the target's; reads too")
    func callsUnderTheOldIDAreTheTargets() async throws {
        try await SocialHarness.with { harness in
            let guest = try await harness.makePlayer("Guest")
            let bob = try await harness.makePlayer("Bob")
            let carol = try await harness.makePlayer("Carol")
            let dave = try await harness.makePlayer("Dave")
            let eve = try await harness.makePlayer("Eve")
            try await harness.mergeSocial(guest, into: bob)

            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(carol)), context: guest.context)
            // Carol answers the request naming the old id.
            _ = try await harness.player.acceptFriendRequest(
                .init(listKey: "friends", userId: guest.id), context: carol.context)
            _ = try await harness.player.follow(.init(listKey: "followers", target: byID(dave)), context: guest.context)
            _ = try await harness.player.blockUser(.init(target: byID(eve)), context: guest.context)

            let friends = try await harness.internalHandlers.friendIds(
                .init(userId: bob.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(friends.userIds == [carol.id])
            let askedUnderOldID = try await harness.internalHandlers.friendIds(
                .init(userId: guest.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(askedUnderOldID.userIds == [carol.id], "leaderboards asking with the old id gets the target's")
            let carolsFriends = try await harness.internalHandlers.friendIds(
                .init(userId: carol.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(carolsFriends.userIds == [bob.id])
            let counts = try await harness.player.getRelationshipCounts(
                .init(listKey: "followers"), context: guest.context)
            #expect(counts.following == 1)
            let blocked = try await harness.internalHandlers.isBlocked(
                .init(userId: eve.id, otherUserId: bob.id), context: SocialHarness.serviceContext)
            #expect(blocked.otherBlockedUser)
            #expect(try await harness.rows(of: guest) == 0)
        }
    }

    @Test("follows under both ids racing the merge all end on the target, each once")
    func followsRacingTheMergeEndOnTheTarget() async throws {
        try await SocialHarness.with { harness in
            let guest = try await harness.makePlayer("Guest")
            let bob = try await harness.makePlayer("Bob")
            var others: [SocialHarness.Player] = []
            for index in 0..<16 { others.append(try await harness.makePlayer("Other\(index)")) }
            let merges = harness.dependencies.mergedUsers
            let followed = others
            async let merged: Void = harness.mergeSocial(guest, into: bob)
            let results = await ConcurrentCalls.run(followed.count) { index in
                try await merges.tracking {
                    try await harness.player.follow(
                        .init(listKey: "followers", target: byID(followed[index])),
                        context: index.isMultiple(of: 2) ? guest.context : bob.context)
                }
            }
            try await merged
            #expect(ConcurrentCalls.failures(results).isEmpty)
            let following = try await harness.internalHandlers.followingIds(
                .init(userId: bob.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(Set(following.userIds) == Set(followed.map(\.id)))
            let counts = try await harness.player.getRelationshipCounts(
                .init(listKey: "followers"), context: bob.context)
            #expect(counts.following == UInt32(followed.count))
            #expect(try await harness.rows(of: guest) == 0)
        }
    }
}

extension SocialHarness {
    /// Merges as identity's saga does (social's part of it).
    func mergeSocial(_ source: Player, into target: Player) async throws {
        _ = try await merge.mergeUsers(
            MergeV1.MergeUsersRequest(
                mergeId: "m-\(RaveID.random().hex)", sourceUserId: source.id, targetUserId: target.id),
            context: SocialHarness.serviceContext)
    }

    /// Relationship rows (edges either way, requests, blocks) still naming `player`.
    func rows(of player: Player) async throws -> Int {
        try await dependencies.pool.query(
            """
            SELECT (SELECT count(*) FROM edges WHERE owner_id = $1 OR peer_id = $1)
                + (SELECT count(*) FROM friend_requests WHERE sender_id = $1 OR recipient_id = $1)
                + (SELECT count(*) FROM blocks WHERE blocker_id = $1 OR blocked_id = $1)
            """, [RaveID(player.id)]
        )[0].decode(Int.self, at: 0)
    }
}
