import RaveRuntime
import RaveTransport

/// Leaderboards' own settings (`RAVE_LEADERBOARDS_*`), beyond what `ServiceConfiguration` reads for every service.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_LEADERBOARDS_SOCIAL_ADDRESS | 127.0.0.1:7502 | the social service, for friends lists (mTLS) |
/// | RAVE_LEADERBOARDS_IDENTITY_ADDRESS | 127.0.0.1:7501 | the identity service, for names on score rows (mTLS) |
struct LeaderboardsConfiguration: Sendable {
    var socialAddress = SocketAddress(host: "127.0.0.1", port: 7502)
    var identityAddress = SocketAddress(host: "127.0.0.1", port: 7501)
    /// What was read, for the start-up log line.
    var settings: [(String, String)] = []

    init() {}

    init(environment: [String: String]) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        socialAddress = try reader.address("RAVE_LEADERBOARDS_SOCIAL_ADDRESS", default: socialAddress)
        identityAddress = try reader.address("RAVE_LEADERBOARDS_IDENTITY_ADDRESS", default: identityAddress)
        settings = reader.effectiveSettings
    }
}
