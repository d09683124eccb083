import RaveRuntime

/// The wallet's own settings (`RAVE_WALLET_*`), beyond what `ServiceConfiguration` reads for every service.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_WALLET_LANES | 4 | group-commit lanes: rounds that commit at once, each on its own connection, 1…64 |
struct WalletConfiguration: Sendable {
    var laneCount = 4
    /// What was read, for the start-up log line.
    var settings: [(String, String)] = []

    init() {}

    /// Reads the settings; a value out of range stops start-up naming the variable.
    init(environment: [String: String]) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        laneCount = try reader.integer("RAVE_WALLET_LANES", default: laneCount, range: 1...64)
        settings = reader.effectiveSettings
    }
}
