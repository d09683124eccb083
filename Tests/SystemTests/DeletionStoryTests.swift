import Foundation
import RaveMessages
import RaveRPC
import RaveTestSupport
import Testing

/// The account-deletion story, through the gateway and the real executables.
///
/// (docs/identity.md, "Deleting an account".) A player with two devices merged into one account, scores, friends, gifts both ways, a push token and
/// money asks support to delete the account. Afterwards no service's database names the account, the id merged
/// into it, its devices or its provider subjects; the ledger still balances; the other player keeps what is theirs.
@Suite("System: a player's account is deleted everywhere", .timeLimit(.minutes(4)))
struct DeletionStoryTests {
    /// Columns that keep a deleted user's id by design.
    ///
    /// (docs/identity.md "Deleting an account": the bare users row,
    /// the deletion's record, the audit log: its entries' states name the ids an operator gave, and gateway-recorded
    /// entries quote the admin requests that named the user, like the deposit below). They name nothing else:
    /// devices, providers, tokens.
    static let idsKept: [String: Set<String>] = [
        "identity": [
            "users.id", "account_deletions.user_id", "audit_events.target_user_id", "audit_events.request",
            "audit_events.before_state", "audit_events.after_state",
        ]
    ]

    @Test func everyServiceForgetsTheDeletedAccountAndTheLedgerStillBalances() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication(settings: .init(mergePolicy: .automatic, crossAppLogin: true))
            _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: stack.admin).defineLeaderboard(
                .init(appId: appID, definition: .init(key: "high", name: "High scores", sorter: 1, active: true)))
            let walletAdmin = WalletV1.WalletAdminClient(caller: stack.admin)
            _ = try await walletAdmin.createCurrency(.init(code: "GOLD", decimals: 2))
            _ = try await walletAdmin.createGame(
                .init(
                    game: .init(
                        gameId: "dice", name: "Dice",
                        math: .odds(
                            .init(sides: 6, winningNumbers: 3, multiplierNumerator: 2, multiplierDenominator: 1)))))
            let bob = try await stack.signUp(appID: appID, name: "Bob")
            let run = UUID().hex.prefix(8)

            // Alice: a guest on her iPad that logs in with Facebook, and one on her phone that logs in with Google.
            let facebookSubject = "alice-facebook-\(run)"
            let facebook = try stack.providers.token(.facebook, subject: facebookSubject)
            let iPad = try await stack.providerLogin(
                try await stack.guest(appID: appID, deviceID: "alice-ipad-\(run)"), appID: appID,
                provider: .facebook, token: facebook)
            let googleSubject = "alice-google-\(run)"
            let phone = try await stack.providerLogin(
                try await stack.guest(appID: appID, deviceID: "alice-phone-\(run)"), appID: appID, provider: .google,
                token: try stack.providers.token(.google, subject: googleSubject))
            let alice = iPad.userID
            let mergedAway = phone.userID

            // What she leaves in every service, under both ids.
            _ = try await iPad.leaderboards.submitScore(.init(leaderboardKey: "high", score: 500))
            _ = try await phone.leaderboards.submitScore(.init(leaderboardKey: "high", score: 700))
            _ = try await bob.leaderboards.submitScore(.init(leaderboardKey: "high", score: 600))
            _ = try await phone.social.sendFriendRequest(
                .init(listKey: "friends", target: .init(key: .userId(bob.userID))))
            _ = try await bob.social.acceptFriendRequest(.init(listKey: "friends", userId: mergedAway))
            let pushToken = "alice-push-\(run)"
            _ = try await iPad.push.registerToken(
                .init(
                    platform: .fcm, token: pushToken, consent: .init(push: true), country: "FR", language: "fr",
                    timeZone: "UTC"))
            var bobsGift = ""
            if stack.hasGifts {
                _ = try await GiftsV1.GiftsAdminClient(caller: stack.admin).createGiftType(
                    .init(appId: appID, giftType: .init(key: "heart", name: "Heart")))
                _ = try await bob.gifts.sendGifts(
                    .init(giftTypeKey: "heart", recipientIds: [mergedAway], idempotencyKey: UUID().hex))
                let sent = try await iPad.gifts.sendGifts(
                    .init(giftTypeKey: "heart", recipientIds: [bob.userID], idempotencyKey: UUID().hex))
                bobsGift = sent.results.first?.id ?? ""
            }
            _ = try await walletAdmin.deposit(
                .init(
                    transfer: .init(
                        operationId: UUID().hex, userId: alice, currency: "GOLD", economy: .sandbox,
                        amount: "100.00", reason: "welcome")))
            _ = try await iPad.wallet.placeBet(
                .init(
                    bet: .init(
                        gameId: "dice", betId: UUID().hex, wager: "5.00", currency: "GOLD", economy: .sandbox,
                        clientSeed: "deletion-story")))

            // The phone connects Facebook: its account merges into the iPad's.
            let connected = try await phone.identity.connectProvider(.init(provider: .facebook, idToken: facebook))
            guard case .merged(let merge)? = connected.outcome else {
                Issue.record("expected a merge, got \(String(describing: connected.outcome))")
                return
            }
            let identityAdmin = IdentityV1.IdentityAdminClient(caller: stack.admin)
            try await eventually("every participant acknowledged the merge") {
                try await identityAdmin.getMergeStatus(.init(mergeId: merge.mergeId)).merge?.state == .completed
            }

            // The scan below finds what it looks for: before the deletion, every service names her.
            let ids = [alice, mergedAway]
            for service in stack.services {
                let database = try await stack.connect(to: service)
                defer { database.close() }
                #expect(!(try await Leftovers.find(ids, in: database)).isEmpty, "\(service) names Alice before")
            }

            // Alice asks support to delete her account; support forces it (no grace period).
            let forced = try await identityAdmin.forceAccountDeletion(
                .init(userId: mergedAway, reason: "the player asked support to delete the account"))
            #expect(forced.deletion?.userId == alice, "a merged-away id deletes the account it was merged into")
            try await eventually("every participant erased the account", timeout: .seconds(60)) {
                let page = try await identityAdmin.listAccountDeletions(.init(userId: alice))
                return page.deletions.first?.status == .completed
            }

            // No database names her ids, devices, provider subjects or push token, except where documented.
            let personal = [
                "alice-ipad-\(run)", "alice-phone-\(run)", facebookSubject, googleSubject, pushToken,
            ]
            for service in stack.services {
                let database = try await stack.connect(to: service)
                defer { database.close() }
                let named = try await Leftovers.find(ids, in: database, allowed: Self.idsKept[service] ?? [])
                #expect(named.isEmpty, "\(service): \(named)")
                let personalLeft = try await Leftovers.find(personal, in: database)
                #expect(personalLeft.isEmpty, "\(service): \(personalLeft)")
            }
            #expect(try await stack.walletBalancesOutOfLine() == 0, "every balance is the sum of its transfers")

            // Her tokens are refused; her devices log in as new guests; Bob keeps his score and her gift.
            let refused = await ErasureChecks.status { _ = try await iPad.identity.getCurrentUser(.init()) }
            #expect(refused == .unauthenticated || refused == .notFound, "\(String(describing: refused))")
            let newGuest = try await stack.guest(appID: appID, deviceID: "alice-ipad-\(run)")
            #expect(!ids.contains(newGuest.userID))
            let board = try await bob.leaderboards.getGlobalScores(
                .init(leaderboardKey: "high", page: 1, pageSize: 10))
            #expect(board.scores.map(\.userId) == [bob.userID], "only Bob is left on the board")
            if stack.hasGifts {
                let received = try await bob.gifts.listGifts(.init())
                #expect(received.gifts.contains { $0.giftId == bobsGift }, "the gift Alice sent stays with Bob")
            }
        }
    }
}
