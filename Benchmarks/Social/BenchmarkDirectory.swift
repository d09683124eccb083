import RaveMessages
import RavePostgres
import RaveRPC
import Social

/// The benchmark's stand-in for identity: every seeded user, held in memory.
///
/// The benchmark measures social's own work (SQL, paging, counts); identity's GetUsers round trip per page is
/// measured by identity's benchmark, so profiles here come from a dictionary loaded from the seeded cache.
struct BenchmarkDirectory: UserDirectory {
    let publisherID: RaveID
    let users: [RaveID: DirectoryProfile]

    func profiles(of userIDs: [RaveID], appID: RaveID?) async throws -> [RaveID: DirectoryProfile] {
        var found: [RaveID: DirectoryProfile] = [:]
        for id in userIDs { if let profile = users[id] { found[id] = profile } }
        return found
    }

    func findUser(_ lookup: UserLookup, appID: RaveID?) async throws -> DirectoryProfile? {
        guard case .id(let id) = lookup else { return nil }
        return users[id]
    }

    func match(_ identifiers: [ExternalIdentifier]) async throws -> [ExternalIdentifier: RaveID] { [:] }

    func users(among userIDs: [RaveID], whoPlayed appID: RaveID) async throws -> Set<RaveID> { Set(userIDs) }

    func publisher(ofApplication appID: RaveID) async throws -> RaveID { publisherID }
}
