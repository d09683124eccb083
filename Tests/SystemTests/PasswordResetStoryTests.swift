import Foundation
import RaveMessages
import RaveRPC
import RaveServices
import Testing

/// A player who forgot the password recovers the account through the real gateway: the reset mail reaches a real
/// SMTP server, its code sets a new password, every old session is refused, and the new password logs in.
@Suite("System: password reset", .timeLimit(.minutes(3)))
struct PasswordResetStoryTests {
    @Test func aForgottenPasswordIsResetFromTheMailAndEveryOldSessionEnds() async throws {
        try await SystemStack.with { stack in
            let appID = try await stack.makeApplication()
            let phone = try await stack.signUp(appID: appID, name: "Forgetful")
            let email = try #require(try await phone.identity.getCurrentUser(.init()).user?.email)
            // The sign-up's verification mail arrives first.
            _ = try await stack.mail.waitForMail(to: email)
            _ = try await phone.identity.getCurrentUser(.init())

            // No token: the player has lost the password, so has no session on the new device.
            _ = try await stack.anonymousIdentity.requestPasswordReset(.init(appId: appID, email: email))
            let mail = try await stack.mail.waitForMail(to: email, after: 1)
            let code = try #require(mail.body.split { !($0.isASCII && $0.isNumber) }.first { $0.count == 8 })
            let reset = try await stack.anonymousIdentity.resetPassword(
                .init(email: email, code: String(code), newPassword: "a brand new password"))
            #expect(reset.revokedSessions == 1)

            try await SessionStoryTests.within(.seconds(1), "the old session's token is refused") {
                do {
                    _ = try await phone.identity.getCurrentUser(.init())
                    return false
                } catch let error as RPCError {
                    return error.code == .unauthenticated
                }
            }
            let oldPassword = await BanStoryTests.status {
                _ = try await stack.anonymousIdentity.loginWithPassword(
                    .init(
                        appId: appID, device: .init(deviceId: "phone-\(UUID().uuidString)"), email: email,
                        password: "correct horse battery"))
            }
            #expect(oldPassword?.code == .unauthenticated)
            let login = try await stack.anonymousIdentity.loginWithPassword(
                .init(
                    appId: appID, device: .init(deviceId: "phone-\(UUID().uuidString)"), email: email,
                    password: "a brand new password"))
            let back = PlayerSession(gateway: stack.gateway, login: login, deviceID: "phone")
            #expect(try await back.identity.getCurrentUser(.init()).user?.profile?.userId == phone.userID)
        }
    }
}
