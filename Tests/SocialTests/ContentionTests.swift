import RaveMessages
import RavePostgres
import RaveRPC
import RaveTestSupport
import Testing

@testable import Social

/// A crowd of players acting on one player at once: every call must answer what it did, never ABORTED, INTERNAL
/// or UNAVAILABLE (contention is the server's problem), and the final state must count every call once.
@Suite("Contention")
struct ContentionTests {
    static let crowd = 200

    @Test func friendRequestsAndAcceptsFromACrowdToOnePlayerInANewApplicationAllSucceed() async throws {
        try await SocialHarness.with(poolSize: 8) { harness in
            let app = try await harness.makeApplication()
            let star = try await harness.makePlayer("Star", appID: app)
            let fans = try await makeCrowd(harness, appID: app)

            let requests = await ConcurrentCalls.run(Self.crowd) { index in
                try await harness.player.sendFriendRequest(
                    .init(listKey: "friends", target: byID(star)), context: fans[index].context
                ).outcome
            }
            #expect(ConcurrentCalls.failures(requests) == [:], "friend requests")
            #expect(requests.allSatisfy { (try? $0.get()) == .sent })
            let incoming = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .incoming), context: star.context)
            #expect(incoming.totalCount == UInt32(Self.crowd))

            let accepts = await ConcurrentCalls.run(Self.crowd) { index in
                _ = try await harness.player.acceptFriendRequest(
                    .init(listKey: "friends", userId: fans[index].id), context: star.context)
            }
            #expect(ConcurrentCalls.failures(accepts) == [:], "accepts")
            let friends = try await harness.internalHandlers.friendIds(
                .init(userId: star.id, appId: app), context: SocialHarness.serviceContext)
            #expect(Set(friends.userIds) == Set(fans.map(\.id)))
            let counts = try await harness.player.getRelationshipCounts(
                .init(listKey: "friends"), context: star.context)
            #expect(counts.friends == UInt32(Self.crowd))
            let left = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .incoming), context: star.context)
            #expect(left.totalCount == 0)
            for fan in fans.prefix(5) {
                let theirs = try await harness.player.getRelationshipCounts(
                    .init(listKey: "friends"), context: fan.context)
                #expect(theirs.friends == 1)
            }
        }
    }

    @Test func crossedRequestsSentAtOnceEndAsFriends() async throws {
        try await SocialHarness.with(poolSize: 8) { harness in
            let players = try await makeCrowd(harness, appID: harness.appID)
            // Pairs (0, 1), (2, 3), …: both ask each other at the same moment.
            let answers = await ConcurrentCalls.run(Self.crowd) { index in
                let partner = players[index ^ 1]
                return try await harness.player.sendFriendRequest(
                    .init(listKey: "friends", target: byID(partner)), context: players[index].context
                ).outcome
            }
            #expect(ConcurrentCalls.failures(answers) == [:], "crossed friend requests")
            for pair in stride(from: 0, to: Self.crowd, by: 2) {
                let outcomes = [answers[pair], answers[pair + 1]].compactMap { try? $0.get() }
                #expect(outcomes.sorted { $0.rawValue < $1.rawValue } == [.sent, .accepted])
                let counts = try await harness.player.getRelationshipCounts(
                    .init(listKey: "friends"), context: players[pair].context)
                #expect(counts.friends == 1)
            }
        }
    }

    @Test func followsAndBlocksFromACrowdOnOnePlayerAllSucceed() async throws {
        try await SocialHarness.with(poolSize: 8) { harness in
            let star = try await harness.makePlayer("Star")
            let fans = try await makeCrowd(harness, appID: harness.appID)
            let follows = await ConcurrentCalls.run(Self.crowd) { index in
                _ = try await harness.player.follow(
                    .init(listKey: "followers", target: byID(star)), context: fans[index].context)
            }
            #expect(ConcurrentCalls.failures(follows) == [:], "follows")
            let followed = try await harness.player.getRelationshipCounts(
                .init(listKey: "followers"), context: star.context)
            #expect(followed.followers == UInt32(Self.crowd))
            // Half of them are friends too, the other half have a request pending: a block ends both.
            let half = Self.crowd / 2
            for fan in fans {
                _ = try await harness.player.sendFriendRequest(
                    .init(listKey: "friends", target: byID(star)), context: fan.context)
            }
            for fan in fans.prefix(half) {
                _ = try await harness.player.acceptFriendRequest(
                    .init(listKey: "friends", userId: fan.id), context: star.context)
            }

            let blocks = await ConcurrentCalls.run(Self.crowd) { index in
                _ = try await harness.player.blockUser(.init(target: byID(star)), context: fans[index].context)
            }
            #expect(ConcurrentCalls.failures(blocks) == [:], "blocks")
            let after = try await harness.player.getRelationshipCounts(
                .init(listKey: "followers"), context: star.context)
            #expect(after.followers == 0)
            let friends = try await harness.player.getRelationshipCounts(
                .init(listKey: "friends"), context: star.context)
            #expect(friends.friends == 0)
            let pending = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .incoming), context: star.context)
            #expect(pending.totalCount == 0)
            for fan in fans.prefix(5) {
                let blocked = try await harness.internalHandlers.isBlocked(
                    .init(userId: star.id, otherUserId: fan.id), context: SocialHarness.serviceContext)
                #expect(blocked.blocked && blocked.otherBlockedUser)
            }
            let blockedByOne = try await harness.player.listBlockedUsers(.init(), context: fans[0].context)
            #expect(blockedByOne.users.map(\.userId) == [star.id])

            // And the other way round: the one player blocks the whole crowd at once.
            let unblocks = await ConcurrentCalls.run(Self.crowd) { index in
                _ = try await harness.player.unblockUser(.init(userId: star.id), context: fans[index].context)
            }
            #expect(ConcurrentCalls.failures(unblocks) == [:], "unblocks")
            let reverse = await ConcurrentCalls.run(Self.crowd) { index in
                _ = try await harness.player.blockUser(.init(target: byID(fans[index])), context: star.context)
            }
            #expect(ConcurrentCalls.failures(reverse) == [:], "blocks by one player")
            let starBlocks = try await harness.player.listBlockedUsers(.init(), context: star.context)
            #expect(starBlocks.totalCount == UInt32(Self.crowd))
        }
    }

    @Test func customListsCreatedAtOnceAllAnswerClearly() async throws {
        try await SocialHarness.with(poolSize: 8) { harness in
            let created = await ConcurrentCalls.run(Self.crowd) { index in
                _ = try await harness.admin.createList(
                    .init(appId: harness.appID, key: "list-\(index)", kind: .friends, scope: .application),
                    context: SocialHarness.adminContext)
            }
            #expect(ConcurrentCalls.failures(created) == [:], "list creations")
            let lists = try await harness.admin.getLists(
                .init(appId: harness.appID), context: SocialHarness.adminContext)
            #expect(lists.lists.count == Self.crowd + 4)

            // One key asked for by many at once: one list, every other call ALREADY_EXISTS.
            let same = await ConcurrentCalls.run(50) { index in
                _ = try await harness.admin.createList(
                    .init(
                        appId: harness.appID, key: "guild", kind: .friends,
                        scope: index.isMultiple(of: 2) ? .global : .application),
                    context: SocialHarness.adminContext)
            }
            let codes = same.map { result -> StatusCode? in
                guard case .failure(let error) = result else { return nil }
                return RPCError(mapping: error, requestID: "test").code
            }
            #expect(codes.filter { $0 == nil }.count == 1)
            #expect(codes.filter { $0 == .alreadyExists }.count == 49)
        }
    }

    // MARK: - Helpers

    /// `crowd` players of `appID`, made a few at a time (identity's pool is small in the harness).
    private func makeCrowd(_ harness: SocialHarness, appID: String) async throws -> [SocialHarness.Player] {
        var players: [SocialHarness.Player] = []
        for start in stride(from: 0, to: Self.crowd, by: 20) {
            let batch = await ConcurrentCalls.run(20) { offset in
                try await harness.makePlayer("Fan \(start + offset)", appID: appID)
            }
            players += try batch.map { try $0.get() }
        }
        return players
    }
}
