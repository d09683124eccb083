import Foundation
import RaveMessages
import RaveRPC
import Testing

/// The security review's input findings, replayed through the real gateway against every real service: text with
/// a NUL, dates, display names, ids in another spelling, operator deposits to nobody, and ranges.
@Suite("System: input the stack refuses", .timeLimit(.minutes(3)))
struct InputStoryTests {
    /// The status `body` failed with, or nil when it succeeded.
    static func refusal(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch let error as RPCError {
            return error
        } catch {
            return RPCError(.unknown, "\(error)")
        }
    }

    @Test func everyServiceRefusesWhatTheReviewSentAndKeepsWhatIsValid() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication()
            let player = try await stack.signUp(appID: appID, name: "Dana")
            let friend = try await stack.guest(appID: appID)

            // Identity: NULs, dates, display names, the random users' limit.
            for update in [
                IdentityV1.UpdateCurrentUserRequest(displayName: .init(value: "Bob\u{0}Evil")),
                IdentityV1.UpdateCurrentUserRequest(username: .init(value: "\u{0}abc")),
                IdentityV1.UpdateCurrentUserRequest(birthDate: .init(value: "2000-13-01")),
                IdentityV1.UpdateCurrentUserRequest(displayName: .init(value: "Bob\nEvil")),
                IdentityV1.UpdateCurrentUserRequest(displayName: .init(value: "\u{1B}[31mRed")),
                IdentityV1.UpdateCurrentUserRequest(
                    displayName: .init(
                        value: String(repeating: "e" + String(repeating: "\u{301}", count: 200), count: 64))),
            ] {
                let refused = await Self.refusal { _ = try await player.identity.updateCurrentUser(update) }
                #expect(refused?.code == .invalidArgument, "\(update)")
                #expect(refused?.message.contains("constraint") == false)
            }
            for _ in 0..<3 {
                let dated = try await player.identity.updateCurrentUser(.init(birthDate: .init(value: "2000-01-15")))
                #expect(dated.user?.birthDate == "2000-01-15")
            }
            let profile = try await player.identity.getCurrentUser(.init()).user?.profile
            #expect(profile?.displayName == "Dana")
            #expect(profile?.username.isEmpty == false)
            let noLimit = await Self.refusal { _ = try await player.identity.getRandomUsers(.init(limit: 0)) }
            #expect(noLimit?.code == .invalidArgument)
            #expect(noLimit?.message == "limit must be 1…50, got 0")

            // Social and gifts: one spelling of a Rave ID; NULs refused.
            let upperFriend = friend.userID.uppercased()
            let friendRequest = await Self.refusal {
                _ = try await player.social.sendFriendRequest(
                    .init(listKey: "friends", target: .init(key: .userId(upperFriend))))
            }
            #expect(friendRequest?.code == .invalidArgument)
            let contact = await Self.refusal {
                _ = try await player.social.addContactByEmail(.init(email: "x@example.com", displayName: "X\u{0}Y"))
            }
            #expect(contact?.code == .invalidArgument)
            #expect(contact?.message.contains("holds a NUL character") == true)
            if stack.hasGifts {
                _ = try await GiftsV1.GiftsAdminClient(caller: stack.admin).createGiftType(
                    .init(appId: appID, giftType: .init(key: "heart", name: "Heart")))
                let gift = await Self.refusal {
                    _ = try await player.gifts.sendGifts(
                        .init(giftTypeKey: "heart", recipientIds: [upperFriend], idempotencyKey: UUID().hex))
                }
                #expect(gift?.code == .invalidArgument)
                #expect(gift?.message == "recipient_ids[0] must be 32 lowercase hex digits, got \"\(upperFriend)\"")
            }

            // Leaderboards and push: a NUL in a key or a token is refused, not cut short.
            _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: stack.admin).defineLeaderboard(
                .init(appId: appID, definition: .init(key: "high", name: "High", sorter: 1, active: true)))
            let score = await Self.refusal {
                _ = try await player.leaderboards.submitScore(.init(leaderboardKey: "high\u{0}er", score: 5))
            }
            #expect(score?.code == .invalidArgument)
            #expect(score?.message.contains("holds a NUL character") == true)
            let token = await Self.refusal {
                _ = try await player.push.registerToken(
                    .init(platform: .apns, token: "abc\u{0}def", consent: .init(push: true), timeZone: "UTC"))
            }
            #expect(token?.code == .invalidArgument)
            #expect(token?.message.contains("holds a NUL character") == true)

            // Wallet: an operator deposit to nobody is NOT_FOUND; a wager or client seed with a NUL is refused.
            let walletAdmin = WalletV1.WalletAdminClient(caller: stack.admin)
            _ = try await walletAdmin.createCurrency(.init(code: "GOLD", decimals: 2))
            let dice = WalletV1.OddsDefinition(
                sides: 6, winningNumbers: 3, multiplierNumerator: 2, multiplierDenominator: 1)
            _ = try await walletAdmin.createGame(.init(game: .init(gameId: "dice", name: "Dice", math: .odds(dice))))
            let nobody = UUID().hex
            let deposit = await Self.refusal {
                _ = try await walletAdmin.deposit(
                    .init(
                        transfer: .init(
                            operationId: UUID().hex, userId: nobody, currency: "GOLD", economy: .sandbox,
                            amount: "100.00")))
            }
            #expect(deposit?.code == .notFound)
            _ = try await walletAdmin.deposit(
                .init(
                    transfer: .init(
                        operationId: UUID().hex, userId: player.userID, currency: "GOLD", economy: .sandbox,
                        amount: "10.00")))
            for bet in [
                WalletV1.Bet(
                    gameId: "dice", betId: UUID().hex, wager: "1.00\u{0}junk", currency: "GOLD", economy: .sandbox,
                    clientSeed: "seed"),
                WalletV1.Bet(
                    gameId: "dice", betId: UUID().hex, wager: "1.00", currency: "GOLD", economy: .sandbox,
                    clientSeed: "seed\u{0}tail"),
            ] {
                let placed = await Self.refusal { _ = try await player.wallet.placeBet(.init(bet: bet)) }
                #expect(placed?.code == .invalidArgument)
                #expect(placed?.message.contains("holds a NUL character") == true)
            }
            let wallet = try await player.wallet.getWallet(.init())
            #expect(wallet.balances.first { $0.currency == "GOLD" && $0.gameId.isEmpty }?.amount == "10.00")

            // The gateway's own decoding: a batch whose call name holds a NUL is refused whole.
            let batch = await Self.refusal {
                _ = try await player.batch.batch(
                    .init(calls: [
                        .init(
                            name: "me\u{0}", method: "rave.identity.v1.Identity/GetCurrentUser",
                            request: IdentityV1.GetCurrentUserRequest().protobufBytes())
                    ]))
            }
            #expect(batch?.code == .invalidArgument)
            #expect(batch?.message.contains("holds a NUL character") == true)
        }
    }
}
