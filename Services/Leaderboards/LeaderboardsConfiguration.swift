import RaveRuntime
import RaveTransport

/// Leaderboards' own settings (`RAVE_LEADERBOARDS_*`), beyond what `ServiceConfiguration` reads for every service.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_LEADERBOARDS_SOCIAL_ADDRESS | 127.0.0.1:7502 | the social service, for friends lists (mTLS); `off`: no friends |
/// | RAVE_LEADERBOARDS_IDENTITY_ADDRESS | 127.0.0.1:7501 | the identity service, for names on score rows (mTLS); `off`: no names |
/// | RAVE_LEADERBOARDS_LEASE_SECONDS | 15 | how long a board's lease lasts without renewal (renewed every third of it) |
/// | RAVE_LEADERBOARDS_ADVERTISE_ADDRESS | RAVE_LISTEN | this instance's RPC address as the gateway's backend list names it |
/// | RAVE_LEADERBOARDS_CONCURRENT_COMMITS | 2 | group commits of score writes running at once, 1…64 (see `SubmitBatcher`) |
/// | RAVE_LEADERBOARDS_CONCURRENT_BATCH | 32 | score writes waiting before a commit starts beside running ones, 1…1024 |
///
/// `off` exists for benchmarks of the engine alone and for deployments without those services.
struct LeaderboardsConfiguration: Sendable {
    var socialAddress: SocketAddress? = SocketAddress(host: "127.0.0.1", port: 7502)
    var identityAddress: SocketAddress? = SocketAddress(host: "127.0.0.1", port: 7501)
    /// A lease outlives a failed renewal by this much; a crashed owner's boards wait this long for a successor.
    var leaseDuration: Duration = .seconds(15)
    /// Where other instances and the gateway send calls for the boards this instance owns.
    var advertiseAddress: String = "127.0.0.1:7503"
    /// More overlap lowers latency under load; fewer makes bigger batches, which cost less CPU per score.
    var concurrentCommits = 2
    /// A commit slot spent on a small batch costs PostgreSQL nearly as much CPU as one of thirty: PostgreSQL pays per
    /// commit, so a second commit starts beside the running one only for a big batch.
    var concurrentBatch = 32
    /// What was read, for the start-up log line.
    var settings: [(String, String)] = []

    init() {}

    /// Reads the settings; `listen` (the RPC listen address) is the advertised address unless one is set.
    init(environment: [String: String], listen: SocketAddress) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        socialAddress = try Self.peer("RAVE_LEADERBOARDS_SOCIAL_ADDRESS", socialAddress, &reader, environment)
        identityAddress = try Self.peer("RAVE_LEADERBOARDS_IDENTITY_ADDRESS", identityAddress, &reader, environment)
        leaseDuration = try reader.duration(
            "RAVE_LEADERBOARDS_LEASE_SECONDS", default: leaseDuration, range: .seconds(1)...(.seconds(3600)))
        advertiseAddress = try reader.address("RAVE_LEADERBOARDS_ADVERTISE_ADDRESS", default: listen).description
        concurrentCommits = try reader.integer(
            "RAVE_LEADERBOARDS_CONCURRENT_COMMITS", default: concurrentCommits, range: 1...64)
        concurrentBatch = try reader.integer(
            "RAVE_LEADERBOARDS_CONCURRENT_BATCH", default: concurrentBatch, range: 1...1024)
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
