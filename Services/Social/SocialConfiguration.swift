import RaveRuntime

/// Social's own settings (`RAVE_SOCIAL_*`), beyond what `ServiceConfiguration` reads for every service.
///
/// | variable | default | meaning |
/// | --- | --- | --- |
/// | RAVE_SOCIAL_IDENTITY_ADDRESS | 127.0.0.1:7501 | the identity service (mTLS with social's certificate) |
/// | RAVE_SOCIAL_MAX_LIST_MEMBERS | 5000 | friends (or followed users) per user and list, unless a list says otherwise |
/// | RAVE_SOCIAL_FRIEND_CACHE_IDS | 10000000 | friend ids FriendIds keeps in memory (16 bytes each); 0 turns it off |
/// | RAVE_SOCIAL_FRIEND_CACHE_MAX_AGE | 60s | how long a cached friend list may serve before it is read again |
package struct SocialConfiguration: Sendable {
    var identityAddress = SocketAddress(host: "127.0.0.1", port: 7501)
    package var maxListMembers = 5_000
    /// 10,000 players with 1,000 friends each (160 MB); a list larger than the whole cache is never kept.
    package var friendCacheIDs = 10_000_000
    var friendCacheMaxAge = Duration.seconds(60)

    package init() {}

    init(environment: [String: String]) throws(RuntimeError) {
        var reader = ConfigurationReader(environment: environment)
        identityAddress = try reader.address("RAVE_SOCIAL_IDENTITY_ADDRESS", default: identityAddress)
        maxListMembers = try reader.integer(
            "RAVE_SOCIAL_MAX_LIST_MEMBERS", default: maxListMembers, range: 1...1_000_000)
        friendCacheIDs = try reader.integer(
            "RAVE_SOCIAL_FRIEND_CACHE_IDS", default: friendCacheIDs, range: 0...1_000_000_000)
        friendCacheMaxAge = try reader.duration(
            "RAVE_SOCIAL_FRIEND_CACHE_MAX_AGE", default: friendCacheMaxAge, range: .seconds(1) ... .seconds(86_400))
        settings = reader.effectiveSettings
    }

    /// What was read, for the start-up log line.
    var settings: [(String, String)] = []
}
