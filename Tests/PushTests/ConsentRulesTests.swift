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

    /// The provider bodies escape strings as every JSON the backend writes does (`JSONString`): no raw control
    /// character or DEL reaches APNs or FCM, and the text reads back unchanged.
    @Test func payloadsEscapeControlCharactersAndDELAndReadBackUnchanged() throws {
        let title = "say \"hi\" \\ \u{1B}[1m\u{7F}\u{0}"
        let body = "line\nnext\ttab 漢字 😀 \u{2028}"
        let notification = PushV1.Notification(
            title: title, body: body, data: [PushV1.DataEntry(key: "k\u{7F}", value: "v\u{1}")])
        for payload in [
            ProviderPayload.apns(notification, sound: false),
            ProviderPayload.fcm(notification, token: "t", ttlSeconds: 1),
        ] {
            #expect(!payload.utf8.contains { $0 < 0x20 || $0 == 0x7F }, "\(payload)")
            #expect(payload.contains(#"\u007f"#))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
            let alert =
                (object["aps"] as? [String: Any])?["alert"] as? [String: Any]
                ?? (object["message"] as? [String: Any])?["notification"] as? [String: Any]
            #expect(alert?["title"] as? String == title)
            #expect(alert?["body"] as? String == body)
        }
    }
}
