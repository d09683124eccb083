import RaveRuntime

/// The wallet's own settings (`RAVE_WALLET_*`), beyond what `ServiceConfiguration` reads for every service.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_WALLET_IDENTITY_ADDRESS | 127.0.0.1:7501 | identity (mTLS with wallet's certificate): `IdentityInternal/ResolveUsers` before an operator deposit, withdrawal or adjustment |
/// | RAVE_WALLET_LANES | 4 | group-commit lanes (`WalletMain.laneCount`) |
struct WalletConfiguration: Sendable {
    var identityAddress = SocketAddress(host: "127.0.0.1", port: 7501)
    /// What was read, for the start-up log line.
    var settings: [(String, String)] = []

    init() {}

    init(environment: [String: String]) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        identityAddress = try reader.address("RAVE_WALLET_IDENTITY_ADDRESS", default: identityAddress)
        settings = reader.effectiveSettings
    }
}
