import Foundation
import RaveMessages
import RaveRPC
import RaveServices
import Testing

/// Sessions and tokens through the real gateway and identity: ending a session ends its access token within a
/// second, the betting SDK's unbacked token reaches only unbacked bets, and FindUser does not reveal accounts.
@Suite("System: sessions and tokens", .timeLimit(.minutes(3)))
struct SessionStoryTests {
    /// A client holding any access token (the session's own, or an unbacked one).
    struct TokenCaller: RPCCaller {
        let gateway: RPCClient
        let token: String

        func call(method: String, request: [UInt8], options: CallOptions) async throws(RPCError) -> [UInt8] {
            var options = options
            options.metadata["authorization"] = "Bearer \(token)"
            return try await gateway.call(method: method, request: request, options: options)
        }

        var identity: IdentityV1.IdentityClient { IdentityV1.IdentityClient(caller: self) }
    }

    static func status(_ body: () async throws -> Void) async -> StatusCode {
        do {
            try await body()
            return .ok
        } catch let error as RPCError {
            return error.code
        } catch {
            return .unknown
        }
    }

    /// Polls every 20 ms until `condition` holds, or fails the test once `limit` has passed.
    static func within(_ limit: Duration, _ description: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw StackError("not within \(limit): \(description)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func logoutEndsTheAccessTokenWithinASecond() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication()
            let alice = try await stack.signUp(appID: appID, name: "Alice")
            _ = try await alice.identity.getCurrentUser(.init())
            _ = try await alice.identity.getCurrentUser(.init())

            _ = try await alice.identity.logout(.init())
            try await Self.within(.seconds(1), "the logged-out token is refused") {
                await Self.status { _ = try await alice.identity.getCurrentUser(.init()) } == .unauthenticated
            }
            #expect(
                await Self.status {
                    _ = try await alice.identity.updateCurrentUser(.init(displayName: .init(value: "Mallory")))
                } == .unauthenticated)
            // The unbacked token of the ended session ends with it.
            #expect(await Self.status { _ = try await alice.identity.issueUnbackedToken(.init()) } == .unauthenticated)
        }
    }

    @Test func revokingAnotherDevicesSessionEndsItsTokenWithinASecond() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication()
            let phone = try await stack.signUp(appID: appID, name: "Bea")
            let email = try #require(try await phone.identity.getCurrentUser(.init()).user?.email)
            let tabletLogin = try await stack.anonymousIdentity.loginWithPassword(
                .init(
                    appId: appID, device: .init(deviceId: "tablet-\(UUID().hex)"), email: email,
                    password: "correct horse battery"))
            let tablet = PlayerSession(gateway: stack.gateway, login: tabletLogin, deviceID: "tablet")
            _ = try await tablet.identity.getCurrentUser(.init())
            _ = try await tablet.identity.getCurrentUser(.init())

            let sessions = try await phone.identity.listSessions(.init()).sessions
            let other = try #require(sessions.first { !$0.current })
            guard case .tokens(let tabletTokens)? = tabletLogin.outcome else {
                throw StackError("the tablet's login returned no tokens")
            }
            #expect(other.sessionId == tabletTokens.sessionId)
            _ = try await phone.identity.revokeSession(.init(sessionId: other.sessionId))
            try await Self.within(.seconds(1), "the revoked device's token is refused") {
                await Self.status { _ = try await tablet.identity.getCurrentUser(.init()) } == .unauthenticated
            }
            #expect(
                await Self.status {
                    _ = try await tablet.identity.updateCurrentUser(.init(displayName: .init(value: "Thief")))
                } == .unauthenticated)
            _ = try await phone.identity.getCurrentUser(.init())
        }
    }

    @Test func unbackedTokenReachesOnlyUnbackedBets() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication()
            let player = try await stack.signUp(appID: appID, name: "Cy")
            let walletAdmin = WalletV1.WalletAdminClient(caller: stack.admin)
            _ = try await walletAdmin.createCurrency(.init(code: "GOLD", decimals: 2))
            let dice = WalletV1.OddsDefinition(
                sides: 6, winningNumbers: 3, multiplierNumerator: 2, multiplierDenominator: 1)
            _ = try await walletAdmin.createGame(.init(game: .init(gameId: "dice", name: "Dice", math: .odds(dice))))

            let issued = try await player.identity.issueUnbackedToken(.init())
            let unbacked = TokenCaller(gateway: stack.gateway, token: issued.accessToken)
            let wallet = WalletV1.WalletClient(caller: unbacked)
            let bet = WalletV1.Bet(
                gameId: "dice", betId: UUID().hex, wager: "1.00", currency: "GOLD", economy: .sandbox,
                clientSeed: "unbacked", unbacked: true)
            let placed = try await wallet.placeBet(.init(bet: bet))
            #expect(placed.result?.status == .settled)

            let refused: [(String, () async throws -> Void)] = [
                ("UpdateCurrentUser", { _ = try await unbacked.identity.updateCurrentUser(.init()) }),
                ("ListSessions", { _ = try await unbacked.identity.listSessions(.init()) }),
                (
                    "SendFriendRequest",
                    {
                        _ = try await SocialV1.SocialClient(caller: unbacked).sendFriendRequest(
                            .init(listKey: "friends", target: .init(key: .userId(player.userID))))
                    }
                ),
                ("ListGifts", { _ = try await GiftsV1.GiftsClient(caller: unbacked).listGifts(.init()) }),
                ("Logout", { _ = try await unbacked.identity.logout(.init()) }),
                ("GetWallet", { _ = try await wallet.getWallet(.init()) }),
            ]
            for (name, call) in refused {
                #expect(await Self.status(call) == .permissionDenied, "\(name)")
            }
            // The refused Logout ended nothing: the session's own token still works.
            _ = try await player.identity.getCurrentUser(.init())
        }
    }

    @Test func findUserByEmailAnswersOtherPublishersAccountsLikeUnknownEmails() async throws {
        try await SystemStack.with { stack in
            let theirs = try await stack.makeApplication()
            let ours = try await stack.makeApplication()
            let victim = try await stack.signUp(appID: theirs, name: "Victim")
            let email = try #require(try await victim.identity.getCurrentUser(.init()).user?.email)
            let guest = try await stack.guest(appID: ours)

            func answer(_ email: String) async -> String {
                do {
                    return "found " + (try await guest.identity.findUser(.init(key: .email(email))).user?.userId ?? "")
                } catch {
                    return "\(error.code) \(error.message)"
                }
            }
            let unknown = await answer("nobody-\(UUID().hex.prefix(8))@example.com")
            #expect(unknown == "\(StatusCode.notFound) no user matches")
            #expect(await answer(email) == unknown)
            // Even a player of the victim's own app does not find an email nobody verified.
            let neighbour = try await stack.guest(appID: theirs)
            let nearby = await Self.status { _ = try await neighbour.identity.findUser(.init(key: .email(email))) }
            #expect(nearby == .notFound)
        }
    }
}
