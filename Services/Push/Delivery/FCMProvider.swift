import Foundation
import RaveHTTPClient
import Synchronization

/// Firebase Cloud Messaging HTTP v1, authenticated with an OAuth2 access token that a service-account RS256 JWT
/// assertion buys from Google's token endpoint.
final class FCMProvider: PushProvider {
    struct Configuration: Sendable {
        /// "https://fcm.googleapis.com".
        var baseURL: String
        var projectID: String
        /// The service account's client_email.
        var clientEmail: String
        var privateKeyPEM: String
        /// The service account's token_uri ("https://oauth2.googleapis.com/token").
        var tokenURL: String
    }

    private let configuration: Configuration
    private let client: HTTP2Client
    private let signer: JWTSigner
    private let clock: any PushClock
    private let cachedToken = Mutex<(token: String, expiresAt: Date)?>(nil)
    /// The token request in flight, shared so a burst of sends buys one token, not one each.
    private let pendingFetch = Mutex<Task<String, any Error>?>(nil)

    init(configuration: Configuration, client: HTTP2Client, clock: any PushClock) throws(PushError) {
        self.configuration = configuration
        self.client = client
        self.clock = clock
        signer = try JWTSigner(privateKeyPEM: configuration.privateKeyPEM, algorithm: .rs256)
    }

    /// The cached access token, or a new one when it is within a minute of expiring.
    func accessToken() async throws(PushError) -> String {
        let now = clock.now()
        if let cached = cachedToken.withLock({ $0 }), cached.expiresAt.timeIntervalSince(now) > 60 {
            return cached.token
        }
        let task = pendingFetch.withLock { pending in
            if let pending { return pending }
            let task = Task { () async throws -> String in
                defer { self.pendingFetch.withLock { $0 = nil } }
                return try await self.fetchAccessToken(now: now)
            }
            pending = task
            return task
        }
        do {
            return try await task.value
        } catch let error as PushError {
            throw error
        } catch {
            throw PushError(.provider, "fetching an access token failed: \(error)")
        }
    }

    private func fetchAccessToken(now: Date) async throws(PushError) -> String {
        var claims = JSONObject()
        claims.add("iss", configuration.clientEmail)
        claims.add("scope", "https://www.googleapis.com/auth/firebase.messaging")
        claims.add("aud", configuration.tokenURL)
        claims.addRaw("iat", String(Int64(now.timeIntervalSince1970)))
        claims.addRaw("exp", String(Int64(now.timeIntervalSince1970) + 3600))
        let assertion = try signer.token(headerFields: [], claims: claims)
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let response = try await client.send(
            HTTPRequest(
                url: configuration.tokenURL, headers: ["content-type: application/x-www-form-urlencoded"],
                body: Array(form.utf8)))
        guard response.status == 200, let json = response.jsonObject, let token = json["access_token"] as? String
        else {
            throw PushError(
                .provider, "the OAuth2 token endpoint answered \(response.status): \(response.bodyText.prefix(200))")
        }
        let lifetime = (json["expires_in"] as? NSNumber)?.doubleValue ?? 3600
        cachedToken.withLock { $0 = (token, now.addingTimeInterval(lifetime)) }
        return token
    }

    func send(_ push: OutgoingPush) async -> ProviderOutcome {
        let ttl = max(0, Int64(push.expiresAt.timeIntervalSince(clock.now())))
        let body = ProviderPayload.fcm(push.notification, token: push.token, ttlSeconds: ttl)
        do {
            let token = try await accessToken()
            let response = try await client.send(
                HTTPRequest(
                    url: "\(configuration.baseURL)/v1/projects/\(configuration.projectID)/messages:send",
                    headers: ["content-type: application/json", "authorization: Bearer \(token)"],
                    body: Array(body.utf8)))
            if response.status == 401 { cachedToken.withLock { $0 = nil } }
            return Self.outcome(response)
        } catch {
            return .retry(after: nil, reason: error.message)
        }
    }

    /// Maps FCM's status and error code (https://firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode).
    static func outcome(_ response: HTTPResponse) -> ProviderOutcome {
        let error = response.jsonObject?["error"] as? [String: Any]
        let status = error?["status"] as? String ?? ""
        let details = error?["details"] as? [[String: Any]] ?? []
        let errorCode = details.compactMap { $0["errorCode"] as? String }.first ?? status
        let message = error?["message"] as? String ?? ""
        let described = "\(response.status) \(errorCode)".trimmingCharacters(in: .whitespaces)
        switch response.status {
        case 200: return .delivered
        case 404 where errorCode == "UNREGISTERED": return .deadToken(since: nil, reason: described)
        // INVALID_ARGUMENT also covers bad payloads; only one about the token means the token is dead.
        case 400 where errorCode == "INVALID_ARGUMENT" && message.localizedCaseInsensitiveContains("token"):
            return .deadToken(since: nil, reason: described)
        case 429, 500...599: return .retry(after: response.retryAfterSeconds, reason: described)
        case 401: return .retry(after: nil, reason: described)
        default: return .failed(reason: described)
        }
    }
}
