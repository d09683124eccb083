import Foundation
import RaveMessages
import RaveRPC
import RaveServices
import Testing

/// An operator bans a cheater with the real `ravectl admin` through the real gateway.
///
/// The player's live tokens stop working within a second on every device, every way back in is refused with the
/// reason, the audit log says who did it, and lifting the ban lets the player back in. The same operator sets the
/// game's allowed web origins.
@Suite("System: bans and the audit log", .timeLimit(.minutes(3)))
struct BanStoryTests {
    static func status(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch let error as RPCError {
            return error
        } catch {
            return RPCError(.unknown, "\(error)")
        }
    }

    @Test func aBannedPlayersTokensStopWithinASecondAndLoginsAreRefusedWithTheReason() async throws {
        try #require(StackProcess.isBuilt("ravectl"), "ravectl is built with the tests")
        try await SystemStack.with { stack in
            let ravectl = try Ravectl(stack: stack)
            defer { ravectl.removeFiles() }
            let appID = try await stack.makeApplication()
            _ = try await ravectl.admin(
                "application", "set-origins",
                #"{"appId": "\#(appID)", "allowedOrigins": {"origins": ["https://play.example", "http://localhost:5173"]}}"#
            )
            let application = try await ravectl.admin("application", "get", #"{"appId": "\#(appID)"}"#)
            let settings = JSONValue(
                ((application.value as? [String: Any])?["application"] as? [String: Any])?["settings"])
            #expect(
                settings.array("allowedOrigins").map { $0.value as? String } == [
                    "https://play.example", "http://localhost:5173",
                ])

            let phone = try await stack.signUp(appID: appID, name: "Cheater")
            let email = try #require(try await phone.identity.getCurrentUser(.init()).user?.email)
            let tabletLogin = try await stack.anonymousIdentity.loginWithPassword(
                .init(
                    appId: appID, device: .init(deviceId: "tablet-\(UUID().uuidString)"), email: email,
                    password: "correct horse battery"))
            let tablet = PlayerSession(gateway: stack.gateway, login: tabletLogin, deviceID: "tablet")
            let bystander = try await stack.signUp(appID: appID, name: "Fair")
            // Warm the gateway's caches, so the ban is refused on the path that serves known tokens.
            for player in [phone, tablet, phone, tablet] { _ = try await player.identity.getCurrentUser(.init()) }

            let reason = "cheating in ranked matches"
            let banned = try await ravectl.admin(
                "user", "ban", #"{"userId": "\#(phone.userID)", "reason": "\#(reason)"}"#)
            #expect(banned.string("userId") == phone.userID)
            #expect((banned.value as? [String: Any])?["revokedSessions"] as? Int == 2)
            try await SessionStoryTests.within(.seconds(1), "the banned player's tokens are refused") {
                var refused = 0
                for player in [phone, tablet] {
                    let error = await Self.status { _ = try await player.identity.getCurrentUser(.init()) }
                    if error?.code == .unauthenticated { refused += 1 }
                }
                return refused == 2
            }
            _ = try await bystander.identity.getCurrentUser(.init())

            // Every way back in says why, with the ban in the status details.
            let login = await Self.status {
                _ = try await stack.anonymousIdentity.loginWithPassword(
                    .init(
                        appId: appID, device: .init(deviceId: "new-\(UUID().uuidString)"), email: email,
                        password: "correct horse battery"))
            }
            #expect(login?.code == .permissionDenied)
            #expect(login?.message == "this account is banned: \(reason)")
            #expect(try IdentityV1.BanInfo(protobufBytes: login?.details ?? []).reason == reason)
            guard case .tokens(let tokens)? = tabletLogin.outcome else { throw StackError("no tokens") }
            let refresh = await Self.status {
                _ = try await stack.anonymousIdentity.refreshSession(.init(refreshToken: tokens.refreshToken))
            }
            #expect(refresh?.code == .permissionDenied)
            #expect(refresh?.message == "this account is banned: \(reason)")
            let guest = await Self.status {
                _ = try await stack.anonymousIdentity.guestLogin(
                    .init(appId: appID, device: .init(deviceId: phone.deviceID)))
            }
            #expect(guest?.message == "this account is banned: \(reason)")

            // The audit log names the admin certificate that acted.
            let audit = try await ravectl.admin("audit", "list", #"{"targetUserId": "\#(phone.userID)"}"#)
            let events = audit.array("events")
            #expect(events.map { $0.string("action") } == ["AUDIT_ACTION_BAN_USER"])
            #expect(events.first?.string("actor") == "admin")
            #expect(events.first?.string("reason") == reason)
            let user = try await ravectl.admin("user", "get", #"{"userId": "\#(phone.userID)"}"#)
            #expect(user.string("ban", "reason") == reason)

            _ = try await ravectl.admin("user", "unban", #"{"userId": "\#(phone.userID)", "reason": "appeal"}"#)
            _ = try await stack.anonymousIdentity.loginWithPassword(
                .init(
                    appId: appID, device: .init(deviceId: "back-\(UUID().uuidString)"), email: email,
                    password: "correct horse battery"))
        }
    }
}
