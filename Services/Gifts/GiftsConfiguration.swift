import RaveRuntime

/// Gifts' own settings (`RAVE_GIFTS_*`), beyond what `ServiceConfiguration` reads for every service.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_GIFTS_IDENTITY_ADDRESS | 127.0.0.1:7501 | the identity service (mTLS with gifts' certificate) |
/// | RAVE_GIFTS_SOCIAL_ADDRESS | 127.0.0.1:7502 | the social service, for blocks |
///
/// Events go to the sinks of `RAVE_EVENT_SINKS` (RaveEvents).
struct GiftsConfiguration: Sendable {
    var identityAddress = SocketAddress(host: "127.0.0.1", port: 7501)
    var socialAddress = SocketAddress(host: "127.0.0.1", port: 7502)

    init() {}

    init(environment: [String: String]) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        identityAddress = try reader.address("RAVE_GIFTS_IDENTITY_ADDRESS", default: identityAddress)
        socialAddress = try reader.address("RAVE_GIFTS_SOCIAL_ADDRESS", default: socialAddress)
        settings = reader.effectiveSettings
    }

    /// What was read, for the start-up log line.
    var settings: [(String, String)] = []
}
