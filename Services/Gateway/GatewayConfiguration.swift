import Foundation
import RaveRuntime

/// The gateway's own settings, from `RAVE_GATEWAY_…` environment variables (the common `RAVE_…` ones are in
/// `ServiceConfiguration`).
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_GATEWAY_<SERVICE>_ADDRESSES | 127.0.0.1:<service port> | comma-separated backends of a service; any <SERVICE> adds a route for `rave.<service>.v1.*` |
/// | RAVE_GATEWAY_BACKEND_CERT, _KEY | the gateway's TLS pair | client certificate presented to services (mTLS) |
/// | RAVE_GATEWAY_BACKEND_CONNECTIONS | 2 | connections per backend address |
/// | RAVE_GATEWAY_HEALTH_INTERVAL | 2s | how often each backend's Health/Check is called |
/// | RAVE_GATEWAY_RECONNECT_BACKOFF | 2s | the longest a backend's client waits between connect attempts (a down backend is also probed every 200 ms) |
/// | RAVE_GATEWAY_DEADLINE_MARGIN | 20ms | taken off the client's remaining time before calling a service |
/// | RAVE_GATEWAY_KEY_REFRESH | 60s | how often identity's signing keys are fetched |
/// | RAVE_GATEWAY_KEY_REFRESH_GAP | 1s | least time between fetches triggered by unknown key ids |
/// | RAVE_GATEWAY_TOKEN_CACHE | 100000 | verified tokens kept (least recently used evicted) |
/// | RAVE_GATEWAY_REVOCATION_POLL | 250ms | how often identity's revocation feed is read |
/// | RAVE_GATEWAY_REVOCATION_MAX_STALENESS | 30s | without a successful read for this long, tokens are refused (0: never) |
/// | RAVE_GATEWAY_MERGE_CACHE_TTL | 30s | how long a user's merge resolution is reused |
/// | RAVE_GATEWAY_USER_RATE, _USER_BURST | 200, 400 | per-user token bucket (calls per second, bucket size) |
/// | RAVE_GATEWAY_ADDRESS_RATE, _ADDRESS_BURST | 2000, 4000 | per-client-address token bucket |
/// | RAVE_GATEWAY_MAX_IN_FLIGHT | 20000 | requests handled at once; more are shed with RESOURCE_EXHAUSTED |
/// | RAVE_GATEWAY_MAX_REQUEST | 256KiB | largest request message of one call |
/// | RAVE_GATEWAY_MAX_CONNECTIONS_PER_ADDRESS | 1000 | connections one client IP may hold open (both ports); more are refused |
/// | RAVE_GATEWAY_HTTP_LISTEN | 127.0.0.1:8443 | the HTTP/JSON front door's TLS address; empty turns it off |
/// | RAVE_GATEWAY_HTTP_STATIC | (none) | static files of the front door: comma-separated `/prefix/=directory` |
struct GatewayConfiguration: Sendable {
    /// Backend addresses by service name; a method `rave.<service>.v1.*` goes to `backends[<service>]`.
    var backends: [String: [SocketAddress]]
    var backendCertificatePath: String
    var backendPrivateKeyPath: String
    var certificateAuthorityPath: String
    var backendConnections: Int
    var healthCheckInterval: Duration
    var reconnectBackoff: Duration
    var deadlineMargin: Duration
    var keyRefreshInterval: Duration
    var keyRefreshMinimumGap: Duration
    var tokenCacheCapacity: Int
    var revocationPollInterval: Duration
    var revocationMaximumStaleness: Duration
    var mergeCacheLifetime: Duration
    var userRate: RateLimit
    var addressRate: RateLimit
    var maxInFlight: Int
    var maxRequestBytes: Int
    var maxConnectionsPerAddress: Int
    /// The HTTP/JSON front door's address; nil when it is off.
    var httpListen: SocketAddress?
    /// Directories the front door serves under URL prefixes.
    var httpStatic: [StaticFiles.Mount]
    /// The settings as read, for the start-up log line.
    var effectiveSettings: [(String, String)]

    /// Reads the gateway's settings; the TLS pair and CA default to the ones of `service`.
    init(environment: [String: String], service: ServiceConfiguration) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        var backends: [String: [SocketAddress]] = [:]
        var names = Set(ServiceDefaults.catalog.map(\.name).filter { $0 != "gateway" })
        for variable in environment.keys where variable.hasPrefix("RAVE_GATEWAY_") && variable.hasSuffix("_ADDRESSES") {
            let name = variable.dropFirst("RAVE_GATEWAY_".count).dropLast("_ADDRESSES".count).lowercased()
            if !name.isEmpty { names.insert(name) }
        }
        for name in names.sorted() {
            let variable = "RAVE_GATEWAY_\(name.uppercased())_ADDRESSES"
            let fallback = "127.0.0.1:\(ServiceDefaults.named(name).port)"
            let text = try reader.string(variable, default: fallback)
            var addresses: [SocketAddress] = []
            for entry in text.split(separator: ",") {
                let trimmed = entry.trimmingCharacters(in: .whitespaces)
                guard let address = SocketAddress(parsing: trimmed), address.port > 0 else {
                    throw .invalidValue(variable, text, allowed: "comma-separated host:port addresses")
                }
                addresses.append(address)
            }
            if !addresses.isEmpty { backends[name] = addresses }
        }
        self.backends = backends
        backendCertificatePath = try reader.string("RAVE_GATEWAY_BACKEND_CERT", default: service.tlsCertificatePath)
        backendPrivateKeyPath = try reader.string("RAVE_GATEWAY_BACKEND_KEY", default: service.tlsPrivateKeyPath)
        certificateAuthorityPath = service.tlsCertificateAuthorityPath
        backendConnections = try reader.integer("RAVE_GATEWAY_BACKEND_CONNECTIONS", default: 2, range: 1...64)
        healthCheckInterval = try reader.duration(
            "RAVE_GATEWAY_HEALTH_INTERVAL", default: .seconds(2), range: .milliseconds(50)...Duration.seconds(3600))
        reconnectBackoff = try reader.duration(
            "RAVE_GATEWAY_RECONNECT_BACKOFF", default: .seconds(2), range: .milliseconds(50)...Duration.seconds(3600))
        deadlineMargin = try reader.duration(
            "RAVE_GATEWAY_DEADLINE_MARGIN", default: .milliseconds(20), range: .zero...Duration.seconds(10))
        keyRefreshInterval = try reader.duration(
            "RAVE_GATEWAY_KEY_REFRESH", default: .seconds(60), range: .seconds(1)...Duration.seconds(86_400))
        keyRefreshMinimumGap = try reader.duration(
            "RAVE_GATEWAY_KEY_REFRESH_GAP", default: .seconds(1), range: .zero...Duration.seconds(3600))
        tokenCacheCapacity = try reader.integer("RAVE_GATEWAY_TOKEN_CACHE", default: 100_000, range: 1...10_000_000)
        revocationPollInterval = try reader.duration(
            "RAVE_GATEWAY_REVOCATION_POLL", default: .milliseconds(250),
            range: .milliseconds(10)...Duration.seconds(60))
        revocationMaximumStaleness = try reader.duration(
            "RAVE_GATEWAY_REVOCATION_MAX_STALENESS", default: .seconds(30), range: .zero...Duration.seconds(86_400))
        mergeCacheLifetime = try reader.duration(
            "RAVE_GATEWAY_MERGE_CACHE_TTL", default: .seconds(30), range: .zero...Duration.seconds(3600))
        userRate = RateLimit(
            perSecond: Double(try reader.integer("RAVE_GATEWAY_USER_RATE", default: 200, range: 1...10_000_000)),
            burst: Double(try reader.integer("RAVE_GATEWAY_USER_BURST", default: 400, range: 1...10_000_000)))
        addressRate = RateLimit(
            perSecond: Double(try reader.integer("RAVE_GATEWAY_ADDRESS_RATE", default: 2000, range: 1...10_000_000)),
            burst: Double(try reader.integer("RAVE_GATEWAY_ADDRESS_BURST", default: 4000, range: 1...10_000_000)))
        maxInFlight = try reader.integer("RAVE_GATEWAY_MAX_IN_FLIGHT", default: 20_000, range: 1...1_000_000)
        maxRequestBytes = try reader.byteSize(
            "RAVE_GATEWAY_MAX_REQUEST", default: 256 << 10, range: 1024...(64 << 20))
        maxConnectionsPerAddress = try reader.integer(
            "RAVE_GATEWAY_MAX_CONNECTIONS_PER_ADDRESS", default: 1000, range: 1...1_000_000)
        if environment["RAVE_GATEWAY_HTTP_LISTEN"] == "" {
            httpListen = nil
            reader.record("RAVE_GATEWAY_HTTP_LISTEN", "(off)")
        } else {
            httpListen = try reader.address(
                "RAVE_GATEWAY_HTTP_LISTEN", default: SocketAddress(host: "127.0.0.1", port: 8443))
        }
        let staticText = environment["RAVE_GATEWAY_HTTP_STATIC"] ?? ""
        httpStatic = try StaticFiles.mounts(parsing: staticText, variable: "RAVE_GATEWAY_HTTP_STATIC")
        reader.record("RAVE_GATEWAY_HTTP_STATIC", staticText.isEmpty ? "(none)" : staticText)
        effectiveSettings = reader.effectiveSettings
    }
}
