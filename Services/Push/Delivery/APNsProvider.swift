import Foundation
import RaveHTTPClient
import Synchronization

/// Apple Push Notification service over HTTP/2, authenticated with an ES256 provider token.
final class APNsProvider: PushProvider {
    struct Configuration: Sendable {
        /// "https://api.push.apple.com" in production.
        var productionURL: String
        /// "https://api.sandbox.push.apple.com" for development builds.
        var sandboxURL: String
        var keyID: String
        var teamID: String
        /// The app's bundle id (apns-topic).
        var topic: String
        var privateKeyPEM: String
        /// Apple refuses tokens older than an hour and throttles ones refreshed more often than every 20 minutes.
        var tokenLifetime: TimeInterval = 40 * 60
    }

    private let configuration: Configuration
    private let client: HTTP2Client
    private let signer: JWTSigner
    private let clock: any PushClock
    private let cachedToken = Mutex<(token: String, issuedAt: Date)?>(nil)

    init(configuration: Configuration, client: HTTP2Client, clock: any PushClock) throws(PushError) {
        self.configuration = configuration
        self.client = client
        self.clock = clock
        signer = try JWTSigner(privateKeyPEM: configuration.privateKeyPEM, algorithm: .es256)
    }

    /// The provider token, reused until its lifetime ends so every stream on the connection shares it.
    func providerToken() throws(PushError) -> String {
        let now = clock.now()
        if let cached = cachedToken.withLock({ $0 }),
            now.timeIntervalSince(cached.issuedAt) < configuration.tokenLifetime
        {
            return cached.token
        }
        var claims = JSONObject()
        claims.add("iss", configuration.teamID)
        claims.addRaw("iat", String(Int64(now.timeIntervalSince1970)))
        let token = try signer.token(headerFields: [("kid", configuration.keyID)], claims: claims)
        cachedToken.withLock { $0 = (token, now) }
        return token
    }

    func send(_ push: OutgoingPush) async -> ProviderOutcome {
        let base = push.sandbox ? configuration.sandboxURL : configuration.productionURL
        var headers = [
            "content-type: application/json", "apns-topic: \(configuration.topic)",
            "apns-expiration: \(Int64(push.expiresAt.timeIntervalSince1970))",
            "apns-push-type: alert",
            "apns-priority: \(push.notification.category == .advertising ? 5 : 10)",
        ]
        if !push.notification.collapseKey.isEmpty {
            headers.append("apns-collapse-id: \(push.notification.collapseKey)")
        }
        do {
            headers.append("authorization: bearer \(try providerToken())")
            let body = ProviderPayload.apns(push.notification, sound: push.sound)
            let response = try await client.send(
                HTTPRequest(url: "\(base)/3/device/\(push.token)", headers: headers, body: Array(body.utf8)))
            return Self.outcome(response)
        } catch {
            return .retry(after: nil, reason: error.message)
        }
    }

    /// Maps APNs' status and reason (https://developer.apple.com/documentation/usernotifications) to an outcome.
    static func outcome(_ response: HTTPResponse) -> ProviderOutcome {
        let reason = response.jsonObject?["reason"] as? String ?? ""
        let described = "\(response.status) \(reason)".trimmingCharacters(in: .whitespaces)
        switch response.status {
        case 200: return .delivered
        case 410:
            // The timestamp is when APNs learned the token was invalid, in milliseconds.
            let since = (response.jsonObject?["timestamp"] as? NSNumber).map {
                Date(timeIntervalSince1970: $0.doubleValue / 1000)
            }
            return .deadToken(since: since, reason: described)
        case 400 where reason == "BadDeviceToken" || reason == "DeviceTokenNotForTopic":
            return .deadToken(since: nil, reason: described)
        case 429, 500...599: return .retry(after: response.retryAfterSeconds, reason: described)
        default: return .failed(reason: described)
        }
    }
}
