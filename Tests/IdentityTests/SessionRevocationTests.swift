import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

/// Ended sessions: identity refuses them itself, and publishes them on the revocation feed the gateway reads.
@Suite("Session revocation")
struct SessionRevocationTests {
    typealias Harness = IdentityHarness

    /// A password account signed in on a phone and a tablet (two sessions).
    func twoDevices(
        _ harness: Harness, app: IdentityV1.Application, email: String = "two@example.com"
    ) async throws -> (phone: IdentityV1.LoginResponse, tablet: IdentityV1.LoginResponse) {
        let phone = try await harness.player.signUp(
            .init(
                appId: app.appId, device: .init(deviceId: "phone"), email: email, password: "correct horse",
                birthYear: 1990, country: "DE"),
            context: Harness.anonymous)
        let tablet = try await harness.player.loginWithPassword(
            .init(appId: app.appId, device: .init(deviceId: "tablet"), email: email, password: "correct horse"),
            context: Harness.anonymous)
        return (phone, tablet)
    }

    func feed(
        _ harness: Harness, after cursor: UInt64 = 0, limit: UInt32 = 0
    ) async throws
        -> IdentityV1.ListRevocationsResponse
    {
        try await harness.internalHandlers.listRevocations(
            .init(afterCursor: cursor, limit: limit), context: Harness.serviceContext)
    }

    /// The sessions one statement ends share a cursor, so a page never ends inside them: a page stops before the
    /// group its limit would cut, and a group larger than the limit comes whole (a reader that paged with the
    /// group's cursor would otherwise never see the rest of it).
    @Test func aPageNeverSplitsTheSessionsOneStatementEnded() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let lone = try await harness.guestLogin(appID: app.appId, deviceID: "lone")
            let (phone, _) = try await twoDevices(harness, app: app, email: "many@example.com")
            for device in 2..<5 {
                _ = try await harness.player.loginWithPassword(
                    .init(
                        appId: app.appId, device: .init(deviceId: "device-\(device)"), email: "many@example.com",
                        password: "correct horse"),
                    context: Harness.anonymous)
            }
            let userID = try #require(phone.user?.profile?.userId)
            let user = try #require(RaveID(wire: userID))
            _ = try await harness.player.logout(.init(), context: Harness.playerContext(lone, appID: app.appId))
            let ended = try await SessionStore(database: harness.dependencies.pool).revokeOthers(
                userID: user, keeping: nil, reason: "two_factor")
            #expect(ended == 5)

            let first = try await feed(harness, limit: 3)
            #expect(first.revocations.map(\.sessionId) == [lone.sessionTokens?.sessionId ?? "-"] && first.more)
            let group = try await feed(harness, after: first.cursor, limit: 3)
            #expect(group.revocations.count == 5 && !group.more)
            #expect(Set(group.revocations.map(\.sessionId)).count == 5)
            let all = try await feed(harness)
            #expect(all.revocations.count == 6 && all.cursor == group.cursor)
        }
    }

    /// A call straight to identity (no gateway, no deny-set) with an ended session's token is refused too.
    @Test func endedSessionsAreRefusedByIdentityItself() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let (phone, tablet) = try await twoDevices(harness, app: app)
            let phoneContext = Harness.playerContext(phone, appID: app.appId)
            let tabletContext = Harness.playerContext(tablet, appID: app.appId)
            _ = try await harness.player.getCurrentUser(.init(), context: phoneContext)

            // The tablet ends the phone's session.
            let phoneSession = try #require(phone.sessionTokens?.sessionId)
            _ = try await harness.player.revokeSession(.init(sessionId: phoneSession), context: tabletContext)
            let read = await statusCode { _ = try await harness.player.getCurrentUser(.init(), context: phoneContext) }
            #expect(read?.code == .unauthenticated)
            #expect(read?.message == "the session has ended; log in again")
            let write = await statusCode {
                _ = try await harness.player.updateCurrentUser(
                    .init(displayName: .init(value: "Mallory")), context: phoneContext)
            }
            #expect(write?.code == .unauthenticated)
            let unbacked = await statusCode {
                _ = try await harness.player.issueUnbackedToken(.init(), context: phoneContext)
            }
            #expect(unbacked?.code == .unauthenticated)
            _ = try await harness.player.getCurrentUser(.init(), context: tabletContext)

            // Logging out ends the tablet's own session.
            _ = try await harness.player.logout(.init(), context: tabletContext)
            let afterLogout = await statusCode {
                _ = try await harness.player.listSessions(.init(), context: tabletContext)
            }
            #expect(afterLogout?.code == .unauthenticated)
        }
    }

    /// Logout, RevokeSession and a reused refresh token appear on the feed in the order they happened, each with
    /// the time its last access token expires; the cursor pages through them and an unchanged feed keeps it.
    @Test func revocationFeedListsEndedSessionsInOrder() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let empty = try await feed(harness)
            #expect(empty.revocations.isEmpty && empty.cursor == 0 && !empty.more)

            let (phone, tablet) = try await twoDevices(harness, app: app)
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "watch")
            let guestTokens = try #require(guest.sessionTokens)
            let tabletContext = Harness.playerContext(tablet, appID: app.appId)
            let before = Date()
            _ = try await harness.player.logout(.init(), context: Harness.playerContext(phone, appID: app.appId))
            _ = try await harness.player.revokeSession(
                .init(sessionId: try #require(tablet.sessionTokens?.sessionId)), context: tabletContext)
            _ = try await harness.player.refreshSession(
                .init(refreshToken: guestTokens.refreshToken), context: Harness.anonymous)
            _ = await statusCode {
                _ = try await harness.player.refreshSession(
                    .init(refreshToken: guestTokens.refreshToken), context: Harness.anonymous)
            }
            // Ending an ended session again publishes nothing.
            _ = await statusCode { _ = try await harness.player.logout(.init(), context: tabletContext) }

            let all = try await feed(harness)
            let expected = [phone, tablet, guest].compactMap { $0.sessionTokens?.sessionId }
            #expect(all.revocations.map(\.sessionId) == expected)
            #expect(!all.more)
            let lifetime = Double(harness.dependencies.revocationHorizon)
            for revocation in all.revocations {
                let expires = Date(timeIntervalSince1970: Double(revocation.expiresAtUnixMs) / 1000)
                #expect(expires >= before.addingTimeInterval(lifetime - 5))
                #expect(expires <= Date().addingTimeInterval(lifetime + 5))
            }

            let first = try await feed(harness, limit: 2)
            #expect(first.revocations.map(\.sessionId) == Array(expected.prefix(2)) && first.more)
            let rest = try await feed(harness, after: first.cursor, limit: 2)
            #expect(rest.revocations.map(\.sessionId) == [expected[2]] && !rest.more)
            #expect(rest.cursor == all.cursor)
            let nothing = try await feed(harness, after: all.cursor)
            #expect(nothing.revocations.isEmpty && nothing.cursor == all.cursor)

            let tooMany = await statusCode { _ = try await feed(harness, limit: 10_001) }
            #expect(tooMany?.code == .invalidArgument)
        }
    }

    /// Confirming two-factor ends every other session of the account, and so does disabling it.
    ///
    /// The sessions it ends were opened without the second factor; the caller's own session goes on. Both changes
    /// appear on the feed.
    @Test func twoFactorChangesEndTheOtherSessions() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication(settings: .init(twoFactorAllowed: true))
            let (phone, tablet) = try await twoDevices(harness, app: app, email: "tf-revoke@example.com")
            let phoneContext = Harness.playerContext(phone, appID: app.appId)
            let tabletContext = Harness.playerContext(tablet, appID: app.appId)
            let enable = try await harness.player.enableTwoFactor(.init(), context: phoneContext)
            let totp = try #require(TOTP(base32Secret: enable.secret))
            let confirm = try await harness.player.confirmTwoFactor(
                .init(code: try totp.code(at: Date())), context: phoneContext)
            #expect(
                await statusCode { _ = try await harness.player.getCurrentUser(.init(), context: tabletContext) }?
                    .code == .unauthenticated)
            _ = try await harness.player.getCurrentUser(.init(), context: phoneContext)
            #expect(
                try await feed(harness).revocations.map(\.sessionId) == [try #require(tablet.sessionTokens?.sessionId)])

            // A new device signs in with the second factor; disabling two-factor on the phone ends it.
            let login = try await harness.player.loginWithPassword(
                .init(
                    appId: app.appId, device: .init(deviceId: "laptop"), email: "tf-revoke@example.com",
                    password: "correct horse"),
                context: Harness.anonymous)
            guard case .twoFactorChallenge(let challenge) = login.outcome else {
                Issue.record("expected a two-factor challenge")
                return
            }
            let laptop = try await harness.player.completeTwoFactorLogin(
                .init(challengeId: challenge.challengeId, code: try #require(confirm.backupCodes.first)),
                context: Harness.anonymous)
            let laptopContext = Harness.playerContext(laptop, appID: app.appId)
            _ = try await harness.player.getCurrentUser(.init(), context: laptopContext)
            _ = try await harness.player.disableTwoFactor(
                .init(code: try #require(confirm.backupCodes.last)), context: phoneContext)
            #expect(
                await statusCode { _ = try await harness.player.getCurrentUser(.init(), context: laptopContext) }?
                    .code == .unauthenticated)
            _ = try await harness.player.getCurrentUser(.init(), context: phoneContext)
            #expect(
                try await feed(harness).revocations.map(\.sessionId).last == laptop.sessionTokens?.sessionId)
        }
    }

    /// The unbacked token (scope `wallet:unbacked`) is for the wallet's unbacked bets: every identity method
    /// refuses it, even one that reaches identity without the gateway's scope rule.
    @Test func unbackedTokenIsRefusedByIdentityMethods() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let login = try await harness.guestLogin(appID: app.appId, deviceID: "slots")
            let tokens = try #require(login.sessionTokens)
            let issued = try await harness.player.issueUnbackedToken(
                .init(), context: Harness.playerContext(login, appID: app.appId))
            #expect(!issued.accessToken.isEmpty)
            let unbacked = Harness.context(
                caller: Caller(
                    userID: login.userID, appID: app.appId, sessionID: tokens.sessionId,
                    scopes: [Caller.playerScope, PlayerHandlers.unbackedOnlyScope]))
            let calls: [(String, () async throws -> Void)] = [
                ("UpdateCurrentUser", { _ = try await harness.player.updateCurrentUser(.init(), context: unbacked) }),
                ("ListSessions", { _ = try await harness.player.listSessions(.init(), context: unbacked) }),
                ("Logout", { _ = try await harness.player.logout(.init(), context: unbacked) }),
                ("GetCurrentUser", { _ = try await harness.player.getCurrentUser(.init(), context: unbacked) }),
                ("IssueUnbackedToken", { _ = try await harness.player.issueUnbackedToken(.init(), context: unbacked) }),
            ]
            for (name, call) in calls {
                let status = await statusCode(call)
                #expect(status?.code == .permissionDenied, "\(name): \(status?.message ?? "served")")
            }
            // The session itself was not ended by the refused Logout.
            _ = try await harness.player.getCurrentUser(
                .init(), context: Harness.playerContext(login, appID: app.appId))
        }
    }
}
