import RaveRuntime

/// The wallet's own settings (`RAVE_WALLET_*`), beyond what `ServiceConfiguration` reads for every service.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_WALLET_IDENTITY_ADDRESS | 127.0.0.1:7501 | identity (mTLS with wallet's certificate): `IdentityInternal/ResolveUsers` before an operator deposit, withdrawal or adjustment |
/// | RAVE_WALLET_LANES | 2 | group-commit lanes: rounds that commit at once, each on its own connection, 1…64 (docs/wallet.md, "Group commit", says why 2) |
package struct WalletConfiguration: Sendable {
    var identityAddress = SocketAddress(host: "127.0.0.1", port: 7501)
    package var laneCount = GroupCommitter.defaultLaneCount
    /// What was read, for the start-up log line.
    var settings: [(String, String)] = []

    init() {}

    /// Reads the settings; a value out of range stops start-up naming the variable.
    package init(environment: [String: String]) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        identityAddress = try reader.address("RAVE_WALLET_IDENTITY_ADDRESS", default: identityAddress)
        laneCount = try reader.integer("RAVE_WALLET_LANES", default: laneCount, range: 1...64)
        settings = reader.effectiveSettings
    }
}
