import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

/// A game that still holds a merged-away player's access token keeps playing with it after the merge completed,
/// through the gateway whose merge cache (the production 30 s) still forwards the old id: everything it does is the
/// account it was merged into.
@Suite("System: the old token after a merge", .timeLimit(.minutes(3)))
struct MergedTokenStoryTests {
    @Test func aScoreAndAGiftSentWithTheOldTokenAfterTheMergeAreBobs() async throws {
        try await SystemStack.with(gatewayMergeCacheTTL: "30s") { stack in
            let appID = try await stack.makeApplication()
            _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: stack.admin).defineLeaderboard(
                .init(appId: appID, definition: .init(key: "high", name: "High scores", sorter: 1, active: true)))
            if stack.hasGifts {
                _ = try await GiftsV1.GiftsAdminClient(caller: stack.admin).createGiftType(
                    .init(appId: appID, giftType: .init(key: "heart", name: "Heart")))
            }
            let carol = try await stack.signUp(appID: appID, name: "Carol")
            let facebookToken = try stack.providers.token(.facebook, subject: "bob-facebook")
            let bob = try await stack.providerLogin(
                try await stack.guest(appID: appID, deviceID: "bob-phone"), appID: appID, provider: .facebook,
                token: facebookToken)
            _ = try await bob.leaderboards.submitScore(.init(leaderboardKey: "high", score: 300))

            // Guest B on a tablet gives itself a name (personalized, so its refreshed token may submit scores) and
            // scores 500; then B logs in with Bob's Facebook account on the tablet and is merged into Bob.
            let guest = try await stack.guest(appID: appID, deviceID: "tablet")
            _ = try await guest.identity.updateCurrentUser(.init(displayName: .init(value: "B")))
            let b = try await stack.refreshed(guest)
            _ = try await b.leaderboards.submitScore(.init(leaderboardKey: "high", score: 500))
            let login = try await stack.providerLogin(b, appID: appID, provider: .facebook, token: facebookToken)
            #expect(login.userID == bob.userID && !login.login.mergeId.isEmpty)
            let identityAdmin = IdentityV1.IdentityAdminClient(caller: stack.admin)
            try await eventually("every participant acknowledged the merge") {
                try await identityAdmin.getMergeStatus(.init(mergeId: login.login.mergeId)).merge?.state == .completed
            }

            // The game still holds B's old access token, which the gateway still resolves to B's old id.
            let late = try await b.leaderboards.submitScore(.init(leaderboardKey: "high", score: 900))
            #expect(late.highScore == 900 && late.globalPosition == 1)
            let board = try await bob.leaderboards.getGlobalScores(.init(leaderboardKey: "high", page: 1, pageSize: 50))
            #expect(board.scores.map { "\($0.userId):\($0.score)" } == ["\(bob.userID):900"], "one entry, Bob's")
            let asB = try await b.leaderboards.getMyGlobalScores(.init(leaderboardKey: "high", pageSize: 10))
            #expect(asB.scores.map(\.userId) == [bob.userID], "the old token reads Bob's standing")

            if stack.hasGifts {
                let sent = try await b.gifts.sendGifts(
                    .init(giftTypeKey: "heart", recipientIds: [carol.userID], idempotencyKey: UUID().hex))
                #expect(sent.results.map(\.status) == [.sent])
                let received = try await carol.gifts.listGifts(.init()).gifts
                #expect(received.map(\.senderId) == [bob.userID], "the gift names Bob as its sender")
            }
            // Nothing is left under B's old id in the services' tables.
            let leaderboards = try await stack.connect(to: "leaderboards")
            defer { leaderboards.close() }
            let rows = try await leaderboards.query(
                PostgresQuery("SELECT count(*) AS left FROM scores WHERE user_id = $1", [RaveID(b.userID)]))
            #expect(try rows[0].decode(Int64.self, column: "left") == 0)
        }
    }
}
