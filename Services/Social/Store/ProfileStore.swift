import RaveMessages
import RavePostgres

/// Names and pictures for pages, and the sort names that edges carry.
///
/// Identity owns names and pictures. Each edge keeps its peer's lower-cased display name (`sort_name`, as the
/// list's application shows it, or the global name for global lists) so a page ordered by name is one index range
/// scan. Sort names are taken from identity when an edge is written and rewritten when a page of the list shows a
/// user whose name changed, so a renamed user may sort under the old name until they are next shown in that list.
struct ProfileStore: Sendable {
    let pool: PostgresPool
    let directory: any UserDirectory

    private static let renamePeer = PostgresStatement(
        name: "social_edges_rename",
        sql: "UPDATE edges SET sort_name = $3 WHERE peer_id = $1 AND list_id = $2 AND sort_name <> $3")

    /// The sort names of `users` in `list`.
    func sortNames(of users: [RaveID], list: RelationshipList) async throws -> SortNames {
        let profiles = try await directory.profiles(of: users, appID: list.appID)
        return SortNames(names: profiles.mapValues { $0.displayName.lowercased() })
    }

    /// Fresh names and pictures for a page as `appID` shows them; edges whose sort name is out of date are fixed.
    func present(
        _ rows: [QueryStore.Row], appID: RaveID, list: RelationshipList? = nil
    ) async throws -> [SocialV1.RelatedUser] {
        if rows.isEmpty { return [] }
        let peers = rows.map(\.peer)
        let fresh = try await directory.profiles(of: peers, appID: appID)
        let users = rows.map { row -> SocialV1.RelatedUser in
            let profile = fresh[row.peer]
            return SocialV1.RelatedUser(
                userId: row.peer.hex, displayName: profile?.displayName ?? "",
                pictureUrl: profile?.pictureURL ?? "", sinceUnixMs: row.since.microsecondsSinceEpoch / 1000)
        }
        guard let list else { return users }
        // A global list sorts by global names, which differ from the application's view just fetched.
        let sortProfiles = list.appID == appID ? fresh : try await directory.profiles(of: peers, appID: list.appID)
        for row in rows {
            guard let name = sortProfiles[row.peer]?.displayName.lowercased(), name != row.sortName else { continue }
            try await pool.execute(Self.renamePeer, [row.peer, list.id, name])
        }
        return users
    }
}
