import Foundation
import RaveHTTPClient
import RaveMessages

/// One delivery as a provider sends it.
struct OutgoingPush: Sendable {
    var token: String
    var sandbox: Bool
    var notification: PushV1.Notification
    /// When the notification stops being worth delivering.
    var expiresAt: Date
    var sound: Bool
}

/// What a provider's answer means for the delivery.
enum ProviderOutcome: Hashable, Sendable {
    case delivered
    /// Try again later: 429 and 5xx; `after` is the provider's retry-after, when it sent one.
    case retry(after: TimeInterval?, reason: String)
    /// The token is dead; remove it unless re-registered after `since` (APNs' timestamp; nil means now).
    case deadToken(since: Date?, reason: String)
    /// A permanent failure of this delivery (bad request, payload refused, authentication).
    case failed(reason: String)
}

/// A push provider: APNs or FCM.
protocol PushProvider: Sendable {
    func send(_ push: OutgoingPush) async -> ProviderOutcome
}

extension HTTPResponse {
    /// Seconds from a retry-after header in its delta-seconds form.
    var retryAfterSeconds: TimeInterval? {
        headers["retry-after"].flatMap { TimeInterval($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The body as a JSON object, for the providers' error answers.
    var jsonObject: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}
