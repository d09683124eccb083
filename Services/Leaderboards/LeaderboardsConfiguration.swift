import RaveRuntime
import RaveTransport

/// Leaderboards' own settings (`RAVE_LEADERBOARDS_*`), beyond what `ServiceConfiguration` reads for every service.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_LEADERBOARDS_SOCIAL_ADDRESS | 127.0.0.1:7502 | the social service, for friends lists (mTLS); `off`: no friends |
/// | RAVE_LEADERBOARDS_IDENTITY_ADDRESS | 127.0.0.1:7501 | the identity service, for names on score rows (mTLS); `off`: no names |
///
/// `off` exists for benchmarks of the engine alone and for deployments without those services.
struct LeaderboardsConfiguration: Sendable {
    var socialAddress: SocketAddress? = SocketAddress(host: "127.0.0.1", port: 7502)
    var identityAddress: SocketAddress? = SocketAddress(host: "127.0.0.1", port: 7501)
    /// What was read, for the start-up log line.
    var settings: [(String, String)] = []

    init() {}

    init(environment: [String: String]) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        socialAddress = try Self.peer("RAVE_LEADERBOARDS_SOCIAL_ADDRESS", socialAddress, &reader, environment)
        identityAddress = try Self.peer("RAVE_LEADERBOARDS_IDENTITY_ADDRESS", identityAddress, &reader, environment)
        settings = reader.effectiveSettings
    }

    private static func peer(
        _ variable: String, _ fallback: SocketAddress?, _ reader: inout ConfigurationReader,
        _ environment: [String: String]
    ) throws(RuntimeError) -> SocketAddress? {
        if environment[variable] == "off" {
            reader.record(variable, "off")
            return nil
        }
        guard let fallback else { return nil }
        return try reader.address(variable, default: fallback)
    }
}
