import Foundation
import RaveMessages

/// What happens to one device's copy of a notification, decided from consent and the device's local time.
enum DeliveryDecision: Hashable, Sendable {
    case sendNow
    /// Advertising during the device's night without night consent: deliver at its next morning.
    case hold(until: Date)
    case skip(reason: String)
}

/// The consent rules: no push without push consent, advertising only with advertising consent, and during local
/// night time (21:00–08:00 in the device's zone) advertising only with night consent.
enum ConsentRules {
    static let nightStartHour = 21
    static let morningHour = 8

    static func decide(
        category: PushV1.Category, nightPolicy: PushV1.NightPolicy, consent: PushV1.Consent, timeZone: TimeZone,
        now: Date
    ) -> DeliveryDecision {
        guard consent.push else { return .skip(reason: "no push consent") }
        guard category == .advertising else { return .sendNow }
        guard consent.advertising else { return .skip(reason: "no advertising consent") }
        guard isNight(at: now, in: timeZone), !consent.nightAdvertising else { return .sendNow }
        switch nightPolicy {
        case .drop, .unrecognized: return .skip(reason: "night time without night advertising consent")
        case .hold: return .hold(until: nextMorning(after: now, in: timeZone))
        }
    }

    /// Whether `date` falls in 21:00–08:00 local time in `zone`.
    static func isNight(at date: Date, in zone: TimeZone) -> Bool {
        let hour = calendar(zone).component(.hour, from: date)
        return hour >= nightStartHour || hour < morningHour
    }

    /// The first 08:00 local time after `date` in `zone` (08:00 the same day when before it).
    static func nextMorning(after date: Date, in zone: TimeZone) -> Date {
        let calendar = calendar(zone)
        var components = DateComponents()
        components.hour = morningHour
        components.minute = 0
        components.second = 0
        return calendar.nextDate(after: date, matching: components, matchingPolicy: .nextTime) ?? date
    }

    private static func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }
}
