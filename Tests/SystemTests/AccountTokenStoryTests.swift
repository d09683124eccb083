import Foundation
import RaveMessages
import RaveRPC
import Testing

/// A game upgrading its guest: the calls that change what a token may do hand the game its new token, so the very
/// next call works without a refresh the game was never told to make.
@Suite("System: account transitions hand the game its tokens", .timeLimit(.minutes(3)))
struct AccountTokenStoryTests {
    @Test func guestThatConnectsAProviderSubmitsAScoreWithTheReturnedToken() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication()
            _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: stack.admin).defineLeaderboard(
                .init(appId: appID, definition: .init(key: "high", name: "High scores", sorter: 1, active: true)))
            let guest = try await stack.guest(appID: appID)
            let anonymous = await Self.status {
                _ = try await guest.leaderboards.submitScore(.init(leaderboardKey: "high", score: 10))
            }
            #expect(anonymous == .failedPrecondition, "a guest may not submit scores")

            let connected = try await guest.identity.connectProvider(
                .init(provider: .google, idToken: try stack.providers.token(.google, subject: "upgrade-\(UUID())")))
            guard case .connected(let user)? = connected.outcome else {
                Issue.record("expected a connected outcome, got \(String(describing: connected.outcome))")
                return
            }
            #expect(user.profile?.accountState == .authenticated)
            let tokens = try #require(connected.session, "ConnectProvider returns the session's new access token")
            #expect(!tokens.accessToken.isEmpty && tokens.accessToken != guest.accessToken)
            #expect(tokens.refreshToken.isEmpty, "the session keeps its refresh token")
            let upgraded = guest.withTokens(tokens)
            let submitted = try await upgraded.leaderboards.submitScore(.init(leaderboardKey: "high", score: 10))
            #expect(submitted.newBest && submitted.highScore == 10)

            // The refresh token the game already held keeps working after the upgrade.
            guard case .tokens(let original)? = guest.login.outcome else { return }
            let refreshed = try await stack.anonymousIdentity.refreshSession(.init(refreshToken: original.refreshToken))
            #expect(refreshed.tokens?.sessionId == tokens.sessionId)
        }
    }

    /// The status code of a call that must fail, or nil when it succeeded.
    static func status(_ body: () async throws -> Void) async -> StatusCode? {
        do {
            try await body()
            return nil
        } catch let error as RPCError {
            return error.code
        } catch {
            return .unknown
        }
    }
}

extension PlayerSession {
    /// The same player and device carrying `tokens` from now on.
    func withTokens(_ tokens: IdentityV1.SessionTokens) -> PlayerSession {
        var login = login
        login.outcome = .tokens(tokens)
        return PlayerSession(gateway: gateway, login: login, deviceID: deviceID)
    }
}
