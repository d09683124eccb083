import Foundation
import RaveMessages
import RaveRPC
import Testing

/// Stories 2 and 3 of the end-to-end stories (docs/TESTING.md), which need the gifts service and the events between services (RaveEvents): a
/// gift between friends reaches the recipient's phone through push and a fake APNs; a gift attached to a Facebook
/// invitation waits for the invited person to join.
@Suite("System: friends, gifts and shares", .timeLimit(.minutes(3)))
struct GiftStoryTests {
    @Test(.enabled(if: StackProcess.isBuilt("gifts"), "needs the gifts executable"))
    func friendsGiftArrivesAsAPushAndIsAcceptedAndFriendsPositionsAreRight() async throws {
        try await SystemStack.with { stack in
            let appID = try await Self.makeGiftApplication(stack)
            let alice = try await stack.signUp(appID: appID, name: "Alice")
            let ben = try await stack.signUp(appID: appID, name: "Ben")
            let carol = try await stack.signUp(appID: appID, name: "Carol")
            let benToken = "ben-ok-\(UUID().hex)"
            _ = try await ben.push.registerToken(
                .init(
                    platform: .apns, token: benToken, sandbox: true, consent: .init(push: true),
                    options: .init(foreground: true, badge: true, sound: true), country: "FR", language: "fr",
                    timeZone: "UTC"))

            // Alice asks Ben to be friends; Ben accepts.
            _ = try await alice.social.sendFriendRequest(
                .init(listKey: "friends", target: .init(key: .userId(ben.userID))))
            _ = try await ben.social.acceptFriendRequest(.init(listKey: "friends", userId: alice.userID))

            // Alice sends Ben a heart; Ben's phone gets a notification at the fake APNs.
            let sent = try await alice.gifts.sendGifts(
                .init(giftTypeKey: "heart", recipientIds: [ben.userID], idempotencyKey: UUID().hex))
            #expect(sent.results.map(\.status) == [.sent])
            let giftID = sent.results.first?.id ?? ""
            try await eventually("Ben's phone was notified of the gift") {
                stack.apns.deliveries().contains { $0.token == benToken && $0.status == 200 }
            }
            let notification = stack.apns.deliveries().first { $0.token == benToken }
            #expect(notification?.body.contains("Alice") == true, "body: \(notification?.body ?? "")")

            let pending = try await ben.gifts.listGifts(.init())
            #expect(pending.gifts.map(\.giftId) == [giftID])
            #expect(pending.gifts.first?.senderId == alice.userID)
            let accepted = try await ben.gifts.acceptGift(.init(giftId: giftID))
            #expect(accepted.gift?.state == .accepted)
            #expect(try await ben.gifts.listGifts(.init()).gifts.isEmpty)

            // Friends leaderboard: Carol (not a friend) scores best, but Alice sees only Ben and herself.
            _ = try await alice.leaderboards.submitScore(.init(leaderboardKey: "high", score: 300))
            _ = try await ben.leaderboards.submitScore(.init(leaderboardKey: "high", score: 900))
            _ = try await carol.leaderboards.submitScore(.init(leaderboardKey: "high", score: 1000))
            let friends = try await alice.leaderboards.getFriendsScores(
                .init(leaderboardKey: "high", page: 1, pageSize: 10))
            #expect(friends.scores.map(\.userId) == [ben.userID, alice.userID])
            #expect(friends.scores.map(\.position) == [1, 2])
            let board = try await alice.leaderboards.getLeaderboard(.init(leaderboardKey: "high"))
            #expect(board.leaderboard?.standing?.friendsPosition == 2)
            #expect(board.leaderboard?.standing?.globalPosition == 3)
        }
    }

    @Test(.enabled(if: StackProcess.isBuilt("gifts"), "needs the gifts executable"))
    func invitedFacebookFriendInstallsThroughTheShortLinkAndFindsTheGift() async throws {
        try await SystemStack.with { stack in
            let appID = try await Self.makeGiftApplication(stack)
            let alice = try await stack.signUp(appID: appID, name: "Alice")
            let eveFacebookID = "eve-\(UUID().hex)"
            let invitationID = "fb-request-\(UUID().hex)"

            // Alice invites Eve, a Facebook friend who does not play, with a heart attached, and shares a link.
            let attached = try await alice.gifts.attachGiftToInvitations(
                .init(
                    giftTypeKey: "heart",
                    invitations: [.init(provider: .facebook, externalUserId: eveFacebookID, requestId: invitationID)]))
            #expect(attached.results.map(\.status) == [.pending])
            let link = try await alice.gifts.createInstallLink(
                .init(giftTypeKey: "heart", requestId: invitationID, channel: "facebook"))

            // Eve installs through the link: the fresh install, without an account, learns what waits for her.
            let install = GiftsV1.GiftsInstallClient(caller: stack.gateway)
            let resolved = try await install.resolveInstallLink(.init(code: link.code))
            #expect(resolved.appId == appID && resolved.requestId == invitationID && resolved.clicks == 1)
            let waiting = try await install.fetchExternalGift(
                .init(appId: appID, requestId: invitationID, provider: .facebook))
            #expect(waiting.giftTypeKey == "heart" && waiting.senderId == alice.userID)

            // She plays as a guest, logs in with Facebook, and finds the gift.
            let guest = try await stack.guest(appID: appID)
            let eve = try await stack.providerLogin(
                guest, appID: appID, provider: .facebook,
                token: try stack.providers.token(.facebook, subject: eveFacebookID))
            try await eventually("Eve received Alice's gift") {
                try await eve.gifts.listGifts(.init()).gifts.contains {
                    $0.senderId == alice.userID && $0.giftTypeKey == "heart"
                }
            }
            let gift = try #require(try await eve.gifts.listGifts(.init()).gifts.first)
            #expect(try await eve.gifts.acceptGift(.init(giftId: gift.giftId)).gift?.state == .accepted)
        }
    }

    /// An application with a "heart" gift type and a "high" leaderboard.
    static func makeGiftApplication(_ stack: SystemStack) async throws -> String {
        let appID = try await stack.makeApplication()
        _ = try await GiftsV1.GiftsAdminClient(caller: stack.admin).createGiftType(
            .init(appId: appID, giftType: .init(key: "heart", name: "Heart", requestable: true)))
        _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: stack.admin).defineLeaderboard(
            .init(appId: appID, definition: .init(key: "high", name: "High scores", sorter: 1, active: true)))
        return appID
    }
}
