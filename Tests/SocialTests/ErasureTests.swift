import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Social

@Suite("Erasure")
struct ErasureTests {
    /// A deleted account's relationships in both directions, requests, blocks, contacts (its own and other users'
    /// matched to it) and events go, with those of an id merged into it and of one only the request names; the
    /// bystanders keep their own relationships with counts that match them; a repeat changes nothing; only
    /// identity may ask.
    @Test func eraseUserLeavesNothingNamingTheUserAndKeepsBystandersCounts() async throws {
        try await SocialHarness.with { harness in
            let user = try await harness.makePlayer("Deleted")
            let merged = try await harness.makePlayer("Merged")
            let bystander = try await harness.makePlayer("Bystander")
            let friend = try await harness.makePlayer("Friend")
            let requester = try await harness.makePlayer("Requester")
            let blocker = try await harness.makePlayer("Blocker")
            let player = harness.player
            func befriend(_ a: SocialHarness.Player, _ b: SocialHarness.Player) async throws {
                _ = try await player.sendFriendRequest(.init(listKey: "friends", target: byID(b)), context: a.context)
                _ = try await player.acceptFriendRequest(.init(listKey: "friends", userId: a.id), context: b.context)
            }
            try await befriend(user, bystander)
            try await befriend(user, friend)
            try await befriend(bystander, friend)
            try await befriend(merged, friend)
            _ = try await player.follow(.init(listKey: "followers", target: byID(bystander)), context: user.context)
            _ = try await player.follow(.init(listKey: "followers", target: byID(user)), context: bystander.context)
            _ = try await player.follow(.init(listKey: "followers", target: byID(friend)), context: bystander.context)
            _ = try await player.sendFriendRequest(
                .init(listKey: "friends", target: byID(user)), context: requester.context)
            _ = try await player.sendFriendRequest(
                .init(listKey: "friends", target: byID(blocker)), context: user.context)
            _ = try await player.blockUser(.init(target: byID(requester)), context: user.context)
            _ = try await player.blockUser(.init(target: byID(user)), context: blocker.context)
            _ = try await player.addContactByEmail(.init(email: "someone@example.test"), context: user.context)
            _ = try await player.addContactsByUsername(
                .init(usernames: [try await harness.username(of: bystander)]), context: user.context)
            _ = try await player.addContactsByUsername(
                .init(usernames: [try await harness.username(of: user)]), context: bystander.context)
            _ = try await player.addContactByEmail(.init(email: "keep@example.test"), context: bystander.context)
            _ = try await harness.merge.mergeUsers(
                .init(mergeId: "merge-into-deleted", sourceUserId: merged.id, targetUserId: user.id),
                context: SocialHarness.serviceContext)
            // Rows a call left under the merged id and under an id only the request names (merged elsewhere).
            let namedOnly = RaveID.random()
            let pool = harness.dependencies.pool
            _ = try await pool.query(
                "INSERT INTO blocks (blocker_id, blocked_id) VALUES ($1, $2), ($3, $2)",
                [RaveID(merged.id), RaveID(bystander.id), namedOnly])
            _ = try await pool.query(
                "INSERT INTO contacts (owner_id, contact_key) VALUES ($1, 'phonebook:late@example.test')",
                [RaveID(merged.id)])
            let ids = [try #require(RaveID(user.id)), try #require(RaveID(merged.id)), namedOnly]
            #expect(try await ErasureChecks.rowsNaming(ids, in: pool).count > 5)

            let request = ErasureV1.EraseUserRequest(
                erasureId: "erasure-1", userId: user.id, mergedUserIds: [merged.id, namedOnly.hex],
                tombstoneId: RaveID.random().hex)
            let participant = SocialErasureParticipant(dependencies: harness.dependencies)
            try await ErasureChecks.serving(participant, as: "social", group: SocialHarness.group) {
                identity, gateway in
                let first = try await identity.eraseUser(request)
                #expect(!first.alreadyApplied)
                #expect(first.rowsAffected > 10)
                #expect(try await ErasureChecks.rowsNaming(ids, in: pool) == [:])
                let before = try await ErasureChecks.rowCounts(in: pool)
                let again = try await identity.eraseUser(request)
                #expect(again.alreadyApplied && again.rowsAffected == 0)
                #expect(try await ErasureChecks.rowCounts(in: pool) == before)
                let refused = await statusCode { _ = try await gateway.eraseUser(request) }
                #expect(refused == .permissionDenied)
            }

            let friends = try await harness.internalHandlers.friendIds(
                .init(userId: bystander.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(friends.userIds == [friend.id])
            let counts = try await player.getRelationshipCounts(.init(listKey: "friends"), context: bystander.context)
            #expect(counts.friends == 1)
            let followers = try await player.getRelationshipCounts(
                .init(listKey: "followers"), context: bystander.context)
            #expect(followers.followers == 0 && followers.following == 1)
            let friendCounts = try await player.getRelationshipCounts(
                .init(listKey: "friends"), context: friend.context)
            #expect(friendCounts.friends == 1)
            let contacts = try await player.queryContacts(.init(), context: bystander.context)
            #expect(contacts.contacts.map(\.key) == ["phonebook:keep@example.test"])
            // Every stored count equals the edges it counts.
            let mismatched = try await pool.query(
                """
                SELECT count(*) FROM (
                    SELECT list_id, owner_id, direction, count(*)::int AS count FROM edges GROUP BY 1, 2, 3) e
                FULL JOIN (SELECT * FROM edge_counts WHERE count > 0) c USING (list_id, owner_id, direction)
                WHERE e.count IS DISTINCT FROM c.count
                """)[0].decode(Int.self, at: 0)
            #expect(mismatched == 0)
            // This process refuses calls naming the deleted account from now on.
            let asDeleted = await statusCode {
                _ = try await player.queryFriends(.init(query: .init(listKey: "friends")), context: user.context)
            }
            #expect(asDeleted == .notFound)
            // Identity here still knows the account (its own deletion is not part of this test): social does not.
            let toDeleted = await statusCode {
                _ = try await player.sendFriendRequest(
                    .init(listKey: "friends", target: byID(user)), context: bystander.context)
            }
            #expect(toDeleted == .notFound)
            #expect(try await ErasureChecks.rowsNaming(ids, in: pool) == [:])
        }
    }
}
