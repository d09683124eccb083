import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Social

@Suite("Friends")
struct FriendTests {
    @Test func requestThenAcceptMakesFriendsOnBothSides() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let sent = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(bob)), context: alice.context)
            #expect(sent.outcome == .sent)
            let incoming = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .incoming), context: bob.context)
            #expect(incoming.users.map(\.userId) == [alice.id])
            #expect(incoming.users.first?.displayName == "Alice")
            let outgoing = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .outgoing), context: alice.context)
            #expect(outgoing.users.map(\.userId) == [bob.id])

            _ = try await harness.player.acceptFriendRequest(
                .init(listKey: "friends", userId: alice.id), context: bob.context)
            let alicesFriends = try await harness.player.queryFriends(
                .init(query: .init(listKey: "friends")), context: alice.context)
            #expect(alicesFriends.page?.users.map(\.userId) == [bob.id])
            #expect(alicesFriends.page?.users.first?.pictureUrl == "https://pictures.test/Bob")
            let bobsFriends = try await harness.player.queryFriends(
                .init(query: .init(listKey: "friends")), context: bob.context)
            #expect(bobsFriends.page?.users.map(\.userId) == [alice.id])
            #expect(bobsFriends.page?.totalCount == 1)
            let remaining = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .incoming), context: bob.context)
            #expect(remaining.users.isEmpty)
        }
    }

    @Test func requestToSomeoneWhoAskedAcceptsTheirs() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(bob)), context: alice.context)
            // Repeating the request keeps one pending request.
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(bob)), context: alice.context)
            let pending = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .incoming), context: bob.context)
            #expect(pending.totalCount == 1)
            let answer = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(alice)), context: bob.context)
            #expect(answer.outcome == .accepted)
            let ids = try await harness.internalHandlers.friendIds(
                .init(userId: alice.id, appId: harness.appID), context: SocialHarness.serviceContext)
            #expect(ids.userIds == [bob.id])
            let again = await statusCode {
                _ = try await harness.player.sendFriendRequest(
                    .init(listKey: "friends", target: byID(alice)), context: bob.context)
            }
            #expect(again == .alreadyExists)
        }
    }

    @Test func rejectCancelAndRemove() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let carol = try await harness.makePlayer("Carol")
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(bob)), context: alice.context)
            _ = try await harness.player.rejectFriendRequest(
                .init(listKey: "friends", userId: alice.id), context: bob.context)
            let acceptRejected = await statusCode {
                _ = try await harness.player.acceptFriendRequest(
                    .init(listKey: "friends", userId: alice.id), context: bob.context)
            }
            #expect(acceptRejected == .notFound)

            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(carol)), context: alice.context)
            _ = try await harness.player.cancelFriendRequest(
                .init(listKey: "friends", userId: carol.id), context: alice.context)
            let incoming = try await harness.player.listFriendRequests(
                .init(listKey: "friends", direction: .incoming), context: carol.context)
            #expect(incoming.users.isEmpty)

            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(bob)), context: alice.context)
            _ = try await harness.player.acceptFriendRequest(
                .init(listKey: "friends", userId: alice.id), context: bob.context)
            _ = try await harness.player.removeFriend(.init(listKey: "friends", userId: alice.id), context: bob.context)
            let friends = try await harness.player.queryFriends(
                .init(query: .init(listKey: "friends")), context: alice.context)
            #expect(friends.page?.users.isEmpty == true)
            #expect(friends.page?.totalCount == 0)
            let removeAgain = await statusCode {
                _ = try await harness.player.removeFriend(
                    .init(listKey: "friends", userId: alice.id), context: bob.context)
            }
            #expect(removeAgain == .notFound)
        }
    }

    @Test func targetsByEmailAndUsername() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer(
                "Bob", email: "bob-\(UInt32.random(in: 0...UInt32.max))@example.test")
            let carol = try await harness.makePlayer("Carol")
            let bobEmail = try await harness.email(of: bob)
            let byEmail = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: .init(key: .email(bobEmail))), context: alice.context)
            #expect(byEmail.userId == bob.id)
            let carolName = try await harness.username(of: carol)
            let byUsername = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: .init(key: .username(carolName))), context: alice.context)
            #expect(byUsername.userId == carol.id)
        }
    }

    @Test func badReferencesAreRefused() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let toSelf = await statusCode {
                _ = try await harness.player.sendFriendRequest(
                    .init(listKey: "friends", target: byID(alice)), context: alice.context)
            }
            #expect(toSelf == .invalidArgument)
            let unknown = await statusCode {
                _ = try await harness.player.sendFriendRequest(
                    .init(listKey: "friends", target: .init(key: .userId(RaveID.random().hex))),
                    context: alice.context)
            }
            #expect(unknown == .notFound)
            let unknownName = await statusCode {
                _ = try await harness.player.sendFriendRequest(
                    .init(listKey: "friends", target: .init(key: .username("nobody-has-this-name"))),
                    context: alice.context)
            }
            #expect(unknownName == .notFound)
            let missing = await statusCode {
                _ = try await harness.player.sendFriendRequest(.init(listKey: "friends"), context: alice.context)
            }
            #expect(missing == .invalidArgument)
            let malformed = await statusCode {
                _ = try await harness.player.acceptFriendRequest(
                    .init(listKey: "friends", userId: "not-an-id"), context: alice.context)
            }
            #expect(malformed == .invalidArgument)
        }
    }

    @Test func friendLimitIsEnforcedWithAClearError() async throws {
        try await SocialHarness.with(maxListMembers: 1) { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let carol = try await harness.makePlayer("Carol")
            _ = try await harness.player.sendFriendRequest(
                .init(listKey: "friends", target: byID(bob)), context: alice.context)
            _ = try await harness.player.acceptFriendRequest(
                .init(listKey: "friends", userId: alice.id), context: bob.context)
            do {
                _ = try await harness.player.sendFriendRequest(
                    .init(listKey: "friends", target: byID(carol)), context: alice.context)
                Issue.record("a request past the limit succeeded")
            } catch let error as SocialError {
                #expect(error.code == .resourceExhausted)
                #expect(error.message.contains("maximum of 1"))
            }
        }
    }
}
