import RaveHTTP
import Synchronization

/// The web origins the front door serves besides its own: the `allowedOrigins` of every application.
///
/// One holder is shared by every HTTP connection; the feed that reads the applications' settings from identity
/// replaces the whole set at each read. Origins are compared exactly ("https://game.example:8443").
final class AllowedOrigins: Sendable {
    private let origins: Mutex<Set<String>>

    init(_ origins: Set<String> = []) {
        self.origins = Mutex(origins)
    }

    /// Replaces the set (the feed's latest read).
    func replace(with origins: Set<String>) {
        self.origins.withLock { $0 = origins }
    }

    func contains(_ origin: String) -> Bool {
        origins.withLock { $0.contains(origin) }
    }
}

/// The front door's CORS rule (docs/gateway.md, "CORS"): which `Origin` is served, and the headers it gets.
///
/// A request without `Origin` (curl, game engines, servers) is not subject to it. A request with one is served
/// only when the origin is the gateway's own (`https://` + the request's `Host`) or one of `allowedOrigins`;
/// anything else, preflight or not, is refused before a call is made.
struct CORSPolicy: Sendable {
    /// What the rule says about one request.
    enum Verdict: Equatable {
        /// No `Origin`: not a cross-origin browser request.
        case noOrigin
        /// Served, with CORS headers naming this origin.
        case allowed(String)
        /// Refused (403, no CORS headers).
        case refused(String)
    }

    let allowedOrigins: AllowedOrigins

    static let allowMethods = "GET, POST, OPTIONS"
    static let allowHeaders =
        "authorization, content-type, accept, idempotency-key, x-request-id, x-rave-timeout-ms, x-rave-reason"
    static let exposeHeaders = "x-request-id, retry-after, x-rave-not-processed"
    static let maxAgeSeconds = "600"

    func verdict(origin: String?, host: String?) -> Verdict {
        guard let origin else { return .noOrigin }
        if let host, origin == "https://" + host { return .allowed(origin) }
        return allowedOrigins.contains(origin) ? .allowed(origin) : .refused(origin)
    }

    /// The headers an answer to an allowed origin carries.
    static func responseHeaders(origin: String) -> [HTTPHeader] {
        [
            HTTPHeader(name: "Access-Control-Allow-Origin", value: origin),
            HTTPHeader(name: "Vary", value: "Origin"),
            HTTPHeader(name: "Access-Control-Expose-Headers", value: exposeHeaders),
        ]
    }

    /// The headers of a preflight's 204 for an allowed origin.
    static func preflightHeaders(origin: String) -> [HTTPHeader] {
        [
            HTTPHeader(name: "Access-Control-Allow-Origin", value: origin),
            HTTPHeader(name: "Vary", value: "Origin"),
            HTTPHeader(name: "Access-Control-Allow-Methods", value: allowMethods),
            HTTPHeader(name: "Access-Control-Allow-Headers", value: allowHeaders),
            HTTPHeader(name: "Access-Control-Max-Age", value: maxAgeSeconds),
        ]
    }
}
