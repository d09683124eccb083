import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Social

@Suite("List queries")
struct QueryTests {
    /// Alice follows six players whose names sort differently by case.
    static func followSix(_ harness: SocialHarness) async throws -> (SocialHarness.Player, [SocialHarness.Player]) {
        let alice = try await harness.makePlayer("Alice")
        var followed: [SocialHarness.Player] = []
        for name in ["delta", "Bravo", "charlie", "Echo", "alpha", "Beta"] {
            let player = try await harness.makePlayer(name)
            _ = try await harness.player.follow(
                .init(listKey: "followers", target: byID(player)), context: alice.context)
            followed.append(player)
        }
        return (alice, followed)
    }

    @Test func ordersByNameCaseInsensitiveAndByRecency() async throws {
        try await SocialHarness.with { harness in
            let (alice, _) = try await Self.followSix(harness)
            let byName = try await harness.player.queryFollowing(
                .init(query: .init(listKey: "followers", order: .displayName)), context: alice.context)
            #expect(byName.page?.users.map(\.displayName) == ["alpha", "Beta", "Bravo", "charlie", "delta", "Echo"])
            #expect(byName.page?.totalCount == 6)
            #expect(byName.page?.nextCursor == "")
            let recent = try await harness.player.queryFollowing(
                .init(query: .init(listKey: "followers", order: .mostRecent)), context: alice.context)
            #expect(recent.page?.users.map(\.displayName) == ["Beta", "alpha", "Echo", "charlie", "Bravo", "delta"])
            #expect(recent.page?.users.allSatisfy { $0.sinceUnixMs > 0 } == true)
            let window = try await harness.player.queryFollowing(
                .init(query: .init(listKey: "followers", offset: 2, limit: 2)), context: alice.context)
            #expect(window.page?.users.map(\.displayName) == ["Bravo", "charlie"])
        }
    }

    @Test func cursorPagesThroughEveryUserOnceInBothOrders() async throws {
        try await SocialHarness.with { harness in
            let (alice, followed) = try await Self.followSix(harness)
            for order in [SocialV1.ListOrder.displayName, .mostRecent] {
                var seen: [String] = []
                var cursor = ""
                for _ in 0..<10 {
                    let page = try await harness.player.queryFollowing(
                        .init(query: .init(listKey: "followers", order: order, limit: 4, cursor: cursor)),
                        context: alice.context
                    ).page
                    seen += page?.users.map(\.userId) ?? []
                    cursor = page?.nextCursor ?? ""
                    if cursor.isEmpty { break }
                }
                #expect(seen.count == 6)
                #expect(Set(seen) == Set(followed.map(\.id)))
            }
        }
    }

    @Test func prefixSearchCountsOnlyMatches() async throws {
        try await SocialHarness.with { harness in
            let (alice, _) = try await Self.followSix(harness)
            let page = try await harness.player.queryFollowing(
                .init(query: .init(listKey: "followers", prefix: "B")), context: alice.context)
            #expect(page.page?.users.map(\.displayName) == ["Beta", "Bravo"])
            #expect(page.page?.totalCount == 2)
            let wildcard = try await harness.player.queryFollowing(
                .init(query: .init(listKey: "followers", prefix: "%")), context: alice.context)
            #expect(wildcard.page?.users.isEmpty == true)
        }
    }

    @Test func badPagingIsRefused() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let defaultLimit = try await harness.player.queryFriends(
                .init(query: .init(listKey: "friends", limit: 0)), context: alice.context)
            #expect(defaultLimit.page?.users.isEmpty == true)
            let one = try await harness.player.queryFriends(
                .init(query: .init(listKey: "friends", limit: 1)), context: alice.context)
            #expect(one.page?.users.isEmpty == true)
            let cases: [SocialV1.ListQuery] = [
                .init(listKey: "friends", limit: 1000),
                .init(listKey: "friends", cursor: "not a cursor!"),
                .init(listKey: "friends", cursor: ListCursor.mostRecent(since: .now(), peerID: .random()).encoded),
                .init(
                    listKey: "friends", offset: 3,
                    cursor: ListCursor.displayName(sortName: "a", peerID: .random()).encoded),
                .init(listKey: "friends", prefix: String(repeating: "x", count: 65)),
                .init(listKey: "friends", offset: 1_000_000),
            ]
            for query in cases {
                let code = await statusCode {
                    _ = try await harness.player.queryFriends(.init(query: query), context: alice.context)
                }
                #expect(code == .invalidArgument, "\(query)")
            }
            let anonymous = await statusCode {
                _ = try await harness.player.queryFriends(
                    .init(query: .init(listKey: "friends")), context: SocialHarness.context(caller: nil))
            }
            #expect(anonymous == .unauthenticated)
        }
    }

    @Test func cursorRoundTripsNamesWithSeparators() throws {
        let peer = RaveID.random()
        let cursor = ListCursor.displayName(sortName: "a|b|c", peerID: peer)
        #expect(try ListCursor(decoding: cursor.encoded, order: .displayName) == cursor)
        #expect(throws: SocialError.self) { try ListCursor(decoding: cursor.encoded, order: .mostRecent) }
        #expect(throws: SocialError.self) { try ListCursor(decoding: "", order: .mostRecent) }
    }
}

@Suite("Rave IDs on the wire")
struct WireFormTests {
    @Test func hexStringIsThirtyTwoLowercaseDigitsThatParseBack() {
        for _ in 0..<100 {
            let id = RaveID.random()
            #expect(id.hex == id.description.replacingOccurrences(of: "-", with: ""))
            #expect(RaveID(id.hex) == id)
        }
    }
}

@Suite("Renames")
struct RenameTests {
    @Test func aRenamedUserShowsFreshAtOnceAndSortsByTheNewNameOnceShown() async throws {
        try await SocialHarness.with { harness in
            let alice = try await harness.makePlayer("Alice")
            let bob = try await harness.makePlayer("Bob")
            let carol = try await harness.makePlayer("Carol")
            for player in [bob, carol] {
                _ = try await harness.player.follow(
                    .init(listKey: "followers", target: byID(player)), context: alice.context)
            }
            try await harness.rename(bob, to: "Zed")
            let first = try await harness.player.queryFollowing(
                .init(query: .init(listKey: "followers")), context: alice.context)
            #expect(first.page?.users.map(\.displayName) == ["Zed", "Carol"])
            let second = try await harness.player.queryFollowing(
                .init(query: .init(listKey: "followers")), context: alice.context)
            #expect(second.page?.users.map(\.displayName) == ["Carol", "Zed"])
        }
    }
}
