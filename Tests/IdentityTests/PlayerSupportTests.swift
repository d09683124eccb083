import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

/// Operators finding players, ending their sessions and resetting their two-factor (docs/identity.md, "Player
/// support"): SearchUsers, ListUserSessions, RevokeUserSessions, ResetTwoFactor.
@Suite("Player support")
struct PlayerSupportTests {
    typealias Harness = IdentityHarness

    func search(_ harness: Harness, _ query: String) async throws -> [String] {
        try await harness.admin.searchUsers(.init(query: query), context: Harness.adminContext).users.map {
            $0.user?.profile?.userId ?? ""
        }
    }

    func signUp(_ harness: Harness, appID: String, email: String, device: String) async throws -> String {
        try await harness.player.signUp(
            .init(
                appId: appID, device: .init(deviceId: device), email: email, password: "correct horse",
                birthYear: 1990, country: "DE"),
            context: Harness.anonymous
        ).userID
    }

    @Test func searchUsersFindsByRaveIDUsernameAndEmailWithoutCase() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let signedUp = try await signUp(harness, appID: app.appId, email: "Search.Me@example.com", device: "a")
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "b")
            _ = try await harness.player.updateCurrentUser(
                .init(username: .init(value: "SearchedGuest")), context: Harness.playerContext(guest, appID: app.appId))

            #expect(try await search(harness, "search.me@EXAMPLE.com") == [signedUp], "the login email, any case")
            #expect(try await search(harness, "searchedguest") == [guest.userID], "the username, any case")
            #expect(try await search(harness, guest.userID) == [guest.userID], "the Rave ID")
            #expect(try await search(harness, "nobody@example.com").isEmpty)
            #expect(try await search(harness, String(repeating: "0", count: 32)).isEmpty, "an unknown Rave ID")

            let match = try #require(
                try await harness.admin.searchUsers(
                    .init(query: "search.me@example.com"), context: Harness.adminContext
                )
                .users.first)
            #expect(match.user?.email == "Search.Me@example.com")
            #expect(match.user?.emailVerified == false, "an unverified email is found and shown as such")
            #expect(match.ban == nil)
        }
    }

    @Test func searchUsersShowsABanAndRefusesAnEmptyOrLongQuery() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let user = try await signUp(harness, appID: app.appId, email: "banned.search@example.com", device: "a")
            _ = try await harness.admin.banUser(
                .init(userId: user, reason: "cheating"), context: Harness.adminContext)
            let match = try await harness.admin.searchUsers(.init(query: user), context: Harness.adminContext).users
            #expect(match.first?.ban?.reason == "cheating")

            for query in ["", String(repeating: "x", count: 255)] {
                let refused = await statusCode {
                    _ = try await harness.admin.searchUsers(.init(query: query), context: Harness.adminContext)
                }
                #expect(refused?.code == .invalidArgument)
                #expect(refused?.message.hasPrefix("query must be 1…254 characters") == true)
            }
            let player = await statusCode {
                _ = try await harness.admin.searchUsers(
                    .init(query: "x"),
                    context: Harness.context(
                        caller: Caller(userID: user, appID: app.appId, sessionID: "", scopes: ["player"])))
            }
            #expect(player?.code == .permissionDenied, "only admins search")
        }
    }

    @Test func listAndRevokeUserSessionsEndOneOrEverySession() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication()
            let phone = try await harness.guestLogin(appID: app.appId, deviceID: "phone")
            let user = phone.userID
            let tablet = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: .init(deviceId: "tablet"), email: "sessions@example.com",
                    password: "correct horse", birthYear: 1990, country: "DE"),
                context: Harness.playerContext(phone, appID: app.appId))
            #expect(tablet.userID == user)
            let listed = try await harness.admin.listUserSessions(.init(userId: user), context: Harness.adminContext)
            #expect(Set(listed.sessions.map(\.deviceId)) == ["phone", "tablet"])
            #expect(listed.sessions.allSatisfy { !$0.current })

            let phoneSession = try #require(phone.sessionTokens?.sessionId)
            let one = try await harness.admin.revokeUserSessions(
                .init(userId: user, sessionId: phoneSession), context: Harness.adminContext)
            #expect(one.revokedSessions == 1)
            let again = try await harness.admin.revokeUserSessions(
                .init(userId: user, sessionId: phoneSession), context: Harness.adminContext)
            #expect(again.revokedSessions == 0, "an ended session is not ended twice")
            let left = try await harness.admin.listUserSessions(.init(userId: user), context: Harness.adminContext)
            #expect(left.sessions.map(\.deviceId) == ["tablet"])

            let all = try await harness.admin.revokeUserSessions(.init(userId: user), context: Harness.adminContext)
            #expect(all.revokedSessions == 1)
            #expect(
                try await harness.admin.listUserSessions(.init(userId: user), context: Harness.adminContext)
                    .sessions.isEmpty)
            let refresh = await statusCode {
                _ = try await harness.player.refreshSession(
                    .init(refreshToken: tablet.sessionTokens?.refreshToken ?? ""), context: Harness.anonymous)
            }
            #expect(refresh?.code == .unauthenticated, "a revoked session cannot be refreshed")

            let unknown = await statusCode {
                _ = try await harness.admin.listUserSessions(
                    .init(userId: String(repeating: "a", count: 32)), context: Harness.adminContext)
            }
            #expect(unknown?.code == .notFound)
            let badSession = await statusCode {
                _ = try await harness.admin.revokeUserSessions(
                    .init(userId: user, sessionId: "nope"), context: Harness.adminContext)
            }
            #expect(badSession?.code == .invalidArgument)
        }
    }

    @Test func resetTwoFactorRemovesItAndEndsEverySession() async throws {
        try await Harness.with { harness in
            let app = try await harness.makeApplication(settings: .init(twoFactorAllowed: true, crossAppLogin: true))
            let signUp = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: .init(deviceId: "lost-phone"), email: "lost@example.com",
                    password: "correct horse", birthYear: 1990, country: "DE"),
                context: Harness.anonymous)
            let context = Harness.playerContext(signUp, appID: app.appId)
            let enable = try await harness.player.enableTwoFactor(.init(), context: context)
            let totp = try #require(TOTP(base32Secret: enable.secret))
            _ = try await harness.player.confirmTwoFactor(.init(code: try totp.code(at: Date())), context: context)
            #expect(
                try await harness.admin.getUser(.init(userId: signUp.userID), context: Harness.adminContext).user?
                    .twoFactorEnabled == true)

            let reset = try await harness.admin.resetTwoFactor(
                .init(userId: signUp.userID), context: Harness.adminContext)
            #expect(reset.wasEnabled)
            #expect(reset.revokedSessions == 1)
            #expect(
                try await harness.admin.getUser(.init(userId: signUp.userID), context: Harness.adminContext).user?
                    .twoFactorEnabled == false)
            let login = try await harness.player.loginWithPassword(
                .init(
                    appId: app.appId, device: .init(deviceId: "new-phone"), email: "lost@example.com",
                    password: "correct horse"),
                context: Harness.context(caller: nil, metadata: ["rave-client-address": "192.0.2.20"]))
            #expect(login.sessionTokens != nil, "the password alone signs in again, without a challenge")

            let again = try await harness.admin.resetTwoFactor(
                .init(userId: signUp.userID), context: Harness.adminContext)
            #expect(!again.wasEnabled)
            #expect(again.revokedSessions == 1, "the new session ends too")
            let unknown = await statusCode {
                _ = try await harness.admin.resetTwoFactor(
                    .init(userId: String(repeating: "b", count: 32)), context: Harness.adminContext)
            }
            #expect(unknown?.code == .notFound)
        }
    }
}
