import RaveRuntime

/// Social's own settings (`RAVE_SOCIAL_*`), beyond what `ServiceConfiguration` reads for every service.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_SOCIAL_IDENTITY_ADDRESS | 127.0.0.1:7501 | the identity service (mTLS with social's certificate) |
/// | RAVE_SOCIAL_MAX_LIST_MEMBERS | 5000 | friends (or followed users) per user and list, unless a list says otherwise |
struct SocialConfiguration: Sendable {
    var identityAddress = SocketAddress(host: "127.0.0.1", port: 7501)
    var maxListMembers = 5_000

    init() {}

    init(environment: [String: String]) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        identityAddress = try reader.address("RAVE_SOCIAL_IDENTITY_ADDRESS", default: identityAddress)
        maxListMembers = try reader.integer(
            "RAVE_SOCIAL_MAX_LIST_MEMBERS", default: maxListMembers, range: 1...1_000_000)
        settings = reader.effectiveSettings
    }

    /// What was read, for the start-up log line.
    var settings: [(String, String)] = []
}
