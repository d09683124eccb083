import RaveMessages
import RavePostgres
import RaveServices

// What the package's other modules (the social benchmark, Benchmarks/Social) call in-process. `package` access:
// nothing outside this package sees it.
extension SocialDependencies {
    /// rave.social.v1.Social over this service.
    package var playerHandler: any SocialV1.SocialHandler { PlayerHandlers(dependencies: self) }

    /// rave.social.v1.SocialInternal over this service.
    package var internalHandler: any SocialV1.SocialInternalHandler { InternalHandlers(dependencies: self) }

    /// The id of `appID`'s friends list `key`, made on first use.
    package func friendsListID(_ key: String, appID: RaveID) async throws -> Int64 {
        try await lists.resolve(key, appID: appID, kind: .friends).id
    }

    /// Runs the FriendIds cache (listening for changes) until `shutdownFriendIDCache`.
    package func runFriendIDCache() async throws { try await friendIDs.run() }

    /// Stops the FriendIds cache.
    package func shutdownFriendIDCache() async { await friendIDs.shutdown() }

    /// Whether the FriendIds cache listens for changes yet (until then it reads the database).
    package var friendIDCacheIsListening: Bool { friendIDs.isListening }

    /// Friend ids the cache holds.
    package var friendIDCacheStoredIDs: Int { friendIDs.storedIDs }
}

extension DirectoryProfile {
    /// A profile without a picture.
    package init(userID: RaveID, displayName: String) {
        self.init(userID: userID, displayName: displayName, pictureURL: "")
    }
}
