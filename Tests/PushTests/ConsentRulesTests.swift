import Foundation
import RaveMessages
import Testing

@testable import Push

@Suite("Consent and night-time rules")
struct ConsentRulesTests {
    let all = PushV1.Consent(push: true, advertising: true, nightAdvertising: true)
    let noNight = PushV1.Consent(push: true, advertising: true, nightAdvertising: false)
    let kiritimati = TimeZone(identifier: "Pacific/Kiritimati") ?? .gmt  // UTC+14
    let pagoPago = TimeZone(identifier: "Pacific/Pago_Pago") ?? .gmt  // UTC−11

    @Test func noPushConsentSkipsEverything() {
        let decision = ConsentRules.decide(
            category: .normal, nightPolicy: .hold, consent: PushV1.Consent(), timeZone: .gmt, now: utc(2026, 1, 1, 12))
        #expect(decision == .skip(reason: "no push consent"))
    }

    @Test func advertisingNeedsAdvertisingConsent() {
        let consent = PushV1.Consent(push: true, advertising: false, nightAdvertising: true)
        #expect(
            ConsentRules.decide(
                category: .advertising, nightPolicy: .hold, consent: consent, timeZone: .gmt, now: utc(2026, 1, 1, 12))
                == .skip(reason: "no advertising consent"))
        #expect(
            ConsentRules.decide(
                category: .normal, nightPolicy: .hold, consent: consent, timeZone: .gmt, now: utc(2026, 1, 1, 23))
                == .sendNow)
    }

    @Test func nightAdvertisingIsHeldUntilLocalMorningOnBothSidesOfTheDateline() {
        let now = utc(2026, 1, 1, 12)  // 02:00 on Jan 2 in Kiritimati, 01:00 on Jan 1 in Pago Pago.
        #expect(
            ConsentRules.decide(
                category: .advertising, nightPolicy: .hold, consent: noNight, timeZone: kiritimati, now: now)
                == .hold(until: utc(2026, 1, 1, 18)))
        #expect(
            ConsentRules.decide(
                category: .advertising, nightPolicy: .hold, consent: noNight, timeZone: pagoPago, now: now)
                == .hold(until: utc(2026, 1, 1, 19)))
        #expect(
            ConsentRules.decide(
                category: .advertising, nightPolicy: .hold, consent: all, timeZone: kiritimati, now: now)
                == .sendNow)
    }

    @Test func nightAdvertisingIsDroppedWhenAsked() {
        let decision = ConsentRules.decide(
            category: .advertising, nightPolicy: .drop, consent: noNight, timeZone: .gmt, now: utc(2026, 1, 1, 21))
        #expect(decision == .skip(reason: "night time without night advertising consent"))
    }

    @Test func nightBoundariesAreNineInTheEveningAndEightInTheMorning() {
        #expect(!ConsentRules.isNight(at: utc(2026, 1, 1, 20, 59), in: .gmt))
        #expect(ConsentRules.isNight(at: utc(2026, 1, 1, 21), in: .gmt))
        #expect(ConsentRules.isNight(at: utc(2026, 1, 1, 7, 59), in: .gmt))
        #expect(!ConsentRules.isNight(at: utc(2026, 1, 1, 8), in: .gmt))
        #expect(ConsentRules.nextMorning(after: utc(2026, 1, 1, 22), in: .gmt) == utc(2026, 1, 2, 8))
    }

    @Test func payloadOverFourKilobytesIsRejected() {
        let big = PushV1.Notification(title: "t", body: String(repeating: "x", count: 4100))
        #expect(throws: PushError.self) { try ProviderPayload.checkSize(big, ttlSeconds: 60) }
        let small = PushV1.Notification(title: "t", body: "\"quoted\"\n")
        #expect(throws: Never.self) { try ProviderPayload.checkSize(small, ttlSeconds: 60) }
    }
}
