import RavePostgres
import Synchronization

/// Where a player's friends come from: in production the social service's `SocialInternal/FriendIds`
/// (`SocialFriendsProvider`).
protocol FriendsProvider: Sendable {
    /// The Rave IDs of `userID`'s friends in `appID` (the player not included).
    func friendIDs(of userID: RaveID, appID: String) async throws -> [RaveID]

    /// `friendIDs(of:appID:)` when the provider holds the answer in memory; nil when it must be asked (then a call
    /// is served by `friendIDs` instead, and not in place on the event loop).
    func knownFriendIDs(of userID: RaveID, appID: String) -> [RaveID]?
}

/// Friends held in memory: tests, and deployments that run without the social service.
final class StaticFriendsProvider: FriendsProvider {
    private let friends = Mutex<[RaveID: Set<RaveID>]>([:])

    init() {}

    /// Makes `first` and `second` friends of each other (friendship is two-way).
    func befriend(_ first: RaveID, _ second: RaveID) {
        friends.withLock { friends in
            friends[first, default: []].insert(second)
            friends[second, default: []].insert(first)
        }
    }

    func friendIDs(of userID: RaveID, appID: String) async throws -> [RaveID] {
        knownFriendIDs(of: userID, appID: appID) ?? []
    }

    func knownFriendIDs(of userID: RaveID, appID: String) -> [RaveID]? {
        friends.withLock { $0[userID].map(Array.init) ?? [] }
    }
}

/// What a score row shows of its player.
struct PlayerProfile: Sendable, Hashable {
    var displayName: String
    var pictureURL: String
}

/// Where display names and pictures come from: in production identity's `IdentityInternal/GetUsers`, cached
/// (`IdentityProfileProvider`).
protocol ProfileProvider: Sendable {
    /// The profiles found among `userIDs`; players without one are left out.
    func profiles(of userIDs: [RaveID], appID: String) async -> [RaveID: PlayerProfile]
}

/// Profiles held in memory: tests, and and `LeaderboardsDependencies` without identity.
final class StaticProfileProvider: ProfileProvider {
    private let profiles = Mutex<[RaveID: PlayerProfile]>([:])

    init() {}

    func setProfile(_ profile: PlayerProfile, for userID: RaveID) {
        profiles.withLock { $0[userID] = profile }
    }

    func profiles(of userIDs: [RaveID], appID: String) async -> [RaveID: PlayerProfile] {
        profiles.withLock { profiles in
            var found: [RaveID: PlayerProfile] = [:]
            for id in userIDs { if let profile = profiles[id] { found[id] = profile } }
            return found
        }
    }
}
