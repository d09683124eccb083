import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Push

@Suite("Device tokens")
struct TokenTests {
    @Test func registeredTokenInfoComesBack() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            let info = try #require(
                try await fixture.register(user, token: "tok-a", platform: .apns, timeZone: "Asia/Seoul"))
            #expect(info.userId == user.hex && info.platform == .apns && info.timeZone == "Asia/Seoul")
            #expect(info.options == PushV1.NotificationOptions(foreground: false, badge: true, sound: true))
            let listed = try await fixture.service.getTokenInfo(
                PushV1.GetTokenInfoRequest(), context: PushFixture.playerContext(user))
            #expect(listed.tokens == [info])
            #expect(info.registeredAtMicros == PostgresTimestamp(fixture.clock.now()).microsecondsSinceEpoch)
        }
    }

    @Test func tokenMovesToTheNewestUserWhoRegistersIt() async throws {
        try await PushFixture.with { fixture in
            let first = RaveID.random()
            let second = RaveID.random()
            try await fixture.register(first, token: "shared-device")
            try await fixture.register(second, token: "shared-device")
            await expectStatus(.notFound) {
                try await fixture.service.getTokenInfo(
                    PushV1.GetTokenInfoRequest(), context: PushFixture.playerContext(first))
            }
            let tokens = try await fixture.service.getTokenInfo(
                PushV1.GetTokenInfoRequest(), context: PushFixture.playerContext(second)
            ).tokens
            #expect(tokens.map(\.token) == ["shared-device"])
        }
    }

    @Test func consentCanBeChangedAndTokensUnregistered() async throws {
        try await PushFixture.with { fixture in
            let user = RaveID.random()
            try await fixture.register(user, token: "tok-c")
            let context = PushFixture.playerContext(user)
            let updated = try await fixture.service.updateConsent(
                PushV1.UpdateConsentRequest(token: "tok-c", consent: PushV1.Consent(push: true)), context: context)
            #expect(updated.updated == 1)
            let info = try await fixture.service.getTokenInfo(PushV1.GetTokenInfoRequest(), context: context).tokens
            #expect(info.first?.consent == PushV1.Consent(push: true, advertising: false, nightAdvertising: false))
            await expectStatus(.notFound) {
                try await fixture.service.updateConsent(
                    PushV1.UpdateConsentRequest(token: "other", consent: PushV1.Consent()), context: context)
            }
            let removed = try await fixture.service.unregisterToken(
                PushV1.UnregisterTokenRequest(token: "tok-c"), context: context)
            #expect(removed.removed == 1)
            await expectStatus(.notFound) {
                try await fixture.service.getTokenInfo(PushV1.GetTokenInfoRequest(), context: context)
            }
        }
    }

    @Test(arguments: [
        BadRegistration(platform: .unspecified, token: "tok", timeZone: "UTC", language: "en", country: "US"),
        BadRegistration(platform: .unrecognized(7), token: "tok", timeZone: "UTC", language: "en", country: "US"),
        BadRegistration(platform: .fcm, token: "", timeZone: "UTC", language: "en", country: "US"),
        BadRegistration(
            platform: .fcm, token: String(repeating: "a", count: 4097), timeZone: "UTC", language: "en", country: "US"),
        BadRegistration(platform: .fcm, token: "has space", timeZone: "UTC", language: "en", country: "US"),
        BadRegistration(platform: .fcm, token: "tok", timeZone: "Mars/Olympus", language: "en", country: "US"),
        BadRegistration(platform: .fcm, token: "tok", timeZone: "", language: "en", country: "US"),
        BadRegistration(platform: .fcm, token: "tok", timeZone: "GMT+3", language: "en", country: "US"),
        BadRegistration(platform: .fcm, token: "tok", timeZone: "UTC", language: "xx-YY-ZZ-QQ", country: "US"),
        BadRegistration(platform: .fcm, token: "tok", timeZone: "UTC", language: "english", country: "US"),
        BadRegistration(platform: .fcm, token: "tok", timeZone: "UTC", language: "en", country: "USA"),
        BadRegistration(platform: .fcm, token: "tok", timeZone: "UTC", language: "en", country: "ZZ"),
        BadRegistration(platform: .fcm, token: "tok", timeZone: "UTC", language: "en", country: "us"),
    ])
    func badRegistrationIsInvalidArgument(_ bad: BadRegistration) async throws {
        try await PushFixture.with { fixture in
            let request = PushV1.RegisterTokenRequest(
                platform: bad.platform, token: bad.token, sandbox: false, consent: nil, options: nil,
                country: bad.country, language: bad.language, timeZone: bad.timeZone)
            await expectStatus(.invalidArgument) {
                try await fixture.service.registerToken(request, context: PushFixture.playerContext(.random()))
            }
        }
    }

    @Test func validCodesAreAccepted() throws {
        #expect(try TokenValidation.language("pt-BR") == "pt-BR")
        #expect(try TokenValidation.language("zh-Hant-TW") == "zh-Hant-TW")
        #expect(try TokenValidation.language("es-419") == "es-419")
        #expect(try TokenValidation.country("KR") == "KR")
        #expect(try TokenValidation.timeZone("America/Argentina/Buenos_Aires").identifier.hasPrefix("America/"))
    }

    @Test func playerMethodsNeedASignedInUser() async throws {
        try await PushFixture.with { fixture in
            await expectStatus(.unauthenticated) {
                try await fixture.service.getTokenInfo(
                    PushV1.GetTokenInfoRequest(), context: PushFixture.context(caller: nil))
            }
        }
    }
}

/// One registration with a single bad field.
struct BadRegistration: Sendable, CustomTestStringConvertible {
    var platform: PushV1.Platform
    var token: String
    var timeZone: String
    var language: String
    var country: String

    var testDescription: String {
        "platform \(platform.rawValue), token \(token.prefix(12)), zone \(timeZone), \(language), \(country)"
    }
}
