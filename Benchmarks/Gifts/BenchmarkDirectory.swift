import Gifts
import RavePostgres

/// The benchmark's stand-in for identity and social: every seeded user exists, nobody blocks anybody.
///
/// The benchmark measures gifts' own work (SQL, the outbox, idempotency); identity's and social's round trips
/// are measured by their own benchmarks.
struct BenchmarkDirectory: PlayerDirectory {
    let users: Set<RaveID>

    func canonicalIDs(of ids: [RaveID]) async throws -> [RaveID: RaveID] {
        var found: [RaveID: RaveID] = [:]
        for id in ids where users.contains(id) { found[id] = id }
        return found
    }

    func displayName(of user: RaveID, appID: RaveID) async -> String { "Player" }

    func blockedPeers(of user: RaveID, among others: [RaveID]) async throws -> Set<RaveID> { [] }

    func linkedUsers(of subjects: [ExternalSubject]) async throws -> [ExternalSubject: RaveID] { [:] }
}
