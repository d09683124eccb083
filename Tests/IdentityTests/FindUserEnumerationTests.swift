import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

/// FindUser by email finds only a verified email of a player of the caller's publisher; everything else answers
/// exactly as an unknown email does, and lookups by email or username are counted per caller.
@Suite("FindUser without enumeration")
struct FindUserEnumerationTests {
    typealias Harness = IdentityHarness

    func find(
        _ harness: Harness, email: String, as caller: RequestContext
    ) async -> (code: StatusCode, message: String)? {
        await statusCode { _ = try await harness.player.findUser(.init(key: .email(email)), context: caller) }
    }

    /// A guest of one publisher's app asks for emails of another publisher's accounts (a password sign-up, whose
    /// email nobody proved, and a Google login whose email Google verified), and for an email nobody has.
    @Test func otherPublishersAndUnverifiedEmailsAnswerLikeUnknownEmails() async throws {
        try await Harness.withProviders { harness, providers in
            let theirs = try await harness.makeApplication()
            let ours = try await harness.makeApplication()
            let sameStudio = try await harness.makeApplication(publisherID: theirs.publisherId)
            let passwordEmail = "victim-\(RaveID.random().hex.prefix(8))@example.com"
            let googleEmail = "known-\(RaveID.random().hex.prefix(8))@example.com"
            let victim = try await harness.player.signUp(
                .init(
                    appId: theirs.appId, device: .init(deviceId: "victim"), email: passwordEmail,
                    password: "correct horse", birthYear: 1990, country: "DE"),
                context: Harness.anonymous)
            let verified = try await harness.providerLogin(
                appID: theirs.appId, deviceID: "verified", provider: .google,
                token: try providers.token(.google, subject: "g-\(RaveID.random().hex)", email: googleEmail))
            let me = verified.user
            #expect(me?.email == googleEmail && me?.emailVerified == true)
            #expect(victim.user?.emailVerified == false)

            let stranger = Harness.playerContext(
                try await harness.guestLogin(appID: ours.appId, deviceID: "g1"), appID: ours.appId)
            let unknown = await find(
                harness, email: "nobody-\(RaveID.random().hex.prefix(8))@example.com", as: stranger)
            #expect(unknown?.code == .notFound)
            #expect(unknown?.message == "no user matches")
            for email in [passwordEmail, googleEmail, googleEmail.uppercased()] {
                let answer = await find(harness, email: email, as: stranger)
                #expect(answer?.code == unknown?.code && answer?.message == unknown?.message, "\(email)")
            }

            // A player of the same publisher (another of its apps) finds the verified email only.
            let colleague = Harness.playerContext(
                try await harness.guestLogin(appID: sameStudio.appId, deviceID: "g2"), appID: sameStudio.appId)
            let found = try await harness.player.findUser(
                .init(key: .email(googleEmail.uppercased())), context: colleague)
            #expect(found.user?.userId == verified.userID)
            let unverified = await find(harness, email: passwordEmail, as: colleague)
            #expect(unverified?.code == unknown?.code && unverified?.message == unknown?.message)

            // Services finding users for a player of an app get the same rule; contact matching, verified emails.
            let internalFind = try await harness.internalHandlers.findUsers(
                .init(
                    references: [.init(key: .email(googleEmail)), .init(key: .email(passwordEmail))], appId: ours.appId),
                context: Harness.serviceContext)
            #expect(internalFind.users.isEmpty)
            let sameStudioFind = try await harness.internalHandlers.findUsers(
                .init(
                    references: [.init(key: .email(googleEmail)), .init(key: .email(passwordEmail))],
                    appId: sameStudio.appId),
                context: Harness.serviceContext)
            #expect(sameStudioFind.users.map { $0.user?.userId } == [verified.userID])
            let unknownApp = try await harness.internalHandlers.findUsers(
                .init(references: [.init(key: .email(googleEmail))], appId: RaveID.random().hex),
                context: Harness.serviceContext)
            #expect(unknownApp.users.isEmpty)
            let matched = try await harness.internalHandlers.lookupExternal(
                .init(emails: [googleEmail, passwordEmail]), context: Harness.serviceContext)
            #expect(matched.matches.map(\.userId) == [verified.userID])
        }
    }

    /// Lookups by email or username spend the caller's budget whatever they find; lookups by Rave ID do not.
    @Test func lookupsByEmailOrUsernameAreRateLimitedPerCaller() async throws {
        try await Harness.with(configure: { $0.findUserLookupsPerMinute = 3 }) { harness in
            let app = try await harness.makeApplication()
            let guest = try await harness.guestLogin(appID: app.appId, deviceID: "prober")
            let other = try await harness.guestLogin(appID: app.appId, deviceID: "other")
            let prober = Harness.playerContext(guest, appID: app.appId)
            for index in 0..<3 {
                #expect(await find(harness, email: "probe\(index)@example.com", as: prober)?.code == .notFound)
            }
            let limited = await statusCode {
                _ = try await harness.player.findUser(.init(key: .username("someone")), context: prober)
            }
            #expect(limited?.code == .resourceExhausted)
            #expect(limited?.message.contains("too many user lookups") == true, "\(limited?.message ?? "")")
            #expect(await find(harness, email: "probe9@example.com", as: prober)?.code == .resourceExhausted)
            let byID = try await harness.player.findUser(.init(key: .userId(other.userID)), context: prober)
            #expect(byID.user?.userId == other.userID)
            // Another caller has a budget of its own.
            let otherContext = Harness.playerContext(other, appID: app.appId)
            #expect(await find(harness, email: "probe0@example.com", as: otherContext)?.code == .notFound)
        }
    }

    @Test func limiterRefillsAndCountsAddressesToo() throws {
        let limiter = LookupLimiter(perUserPerMinute: 2, perAddressPerMinute: 3)
        let start = ContinuousClock.now
        try limiter.charge(user: "a", address: "10.0.0.1", now: start)
        try limiter.charge(user: "a", address: "10.0.0.1", now: start)
        #expect(throws: IdentityError.self) { try limiter.charge(user: "a", address: "10.0.0.1", now: start) }
        // A new guest from the same address has its own budget, but the address's runs out.
        try limiter.charge(user: "b", address: "10.0.0.1", now: start)
        #expect(throws: IdentityError.self) { try limiter.charge(user: "c", address: "10.0.0.1", now: start) }
        try limiter.charge(user: "c", address: "10.0.0.2", now: start)
        // One lookup per 30 s comes back for a budget of 2 per minute.
        #expect(throws: IdentityError.self) { try limiter.charge(user: "a", address: nil, now: start + .seconds(29)) }
        try limiter.charge(user: "a", address: nil, now: start + .seconds(31))
    }
}
