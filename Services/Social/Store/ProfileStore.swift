import RaveMessages
import RavePostgres

/// The cache of display names that list queries order and search by, filled and refreshed from identity.
///
/// Identity owns names and pictures; the database needs a copy to sort a thousand friends by name in SQL. A row
/// is written the first time a list query of an application meets a user without one, and rewritten whenever a
/// page shows the user and identity's answer differs, so names lag at most until the user is next shown.
struct ProfileStore: Sendable {
    let pool: PostgresPool
    let directory: any UserDirectory

    private static let selectMissing = PostgresStatement(
        name: "social_profiles_missing",
        sql: """
            SELECT e.peer_id FROM edges e
            WHERE e.list_id = $1 AND e.owner_id = $2 AND e.direction = $3
                AND NOT EXISTS (SELECT 1 FROM profiles p WHERE p.app_id = $4 AND p.user_id = e.peer_id)
            LIMIT 1000
            """)
    private static let upsert = PostgresStatement(
        name: "social_profiles_upsert",
        sql: """
            INSERT INTO profiles (app_id, user_id, display_name, sort_name, picture_url)
            SELECT $1, u.user_id, u.display_name, lower(u.display_name), u.picture_url
            FROM unnest($2::uuid[], $3::text[], $4::text[]) AS u (user_id, display_name, picture_url)
            ON CONFLICT (app_id, user_id) DO UPDATE
            SET display_name = EXCLUDED.display_name, sort_name = EXCLUDED.sort_name,
                picture_url = EXCLUDED.picture_url, refreshed_at = now()
            """)

    /// Caches the names of every peer in the owner's list that has none yet for `appID`.
    func fillMissing(list: RelationshipList, owner: RaveID, direction: EdgeDirection, appID: RaveID) async throws {
        // Bounded: a list holds at most max_members peers, and each round caches up to 1000 of them.
        for _ in 0..<((list.maxMembers / 1000) + 2) {
            let missing = try await pool.execute(Self.selectMissing, [list.id, owner, direction.rawValue, appID]).map {
                try $0.decode(RaveID.self, column: "peer_id")
            }
            if missing.isEmpty { return }
            let found = try await directory.profiles(of: missing, appID: appID)
            // Users identity no longer knows get an empty name, so they are not asked for again and again.
            let profiles = missing.map { found[$0] ?? DirectoryProfile(userID: $0, displayName: "", pictureURL: "") }
            try await store(profiles, appID: appID)
        }
    }

    /// Fresh names and pictures for a page, refreshing the cache rows that changed.
    func present(
        _ rows: [(peer: RaveID, since: PostgresTimestamp, cached: DirectoryProfile?)], appID: RaveID
    ) async throws -> [SocialV1.RelatedUser] {
        if rows.isEmpty { return [] }
        let fresh = try await directory.profiles(of: rows.map(\.peer), appID: appID)
        var changed: [DirectoryProfile] = []
        let users = rows.map { row -> SocialV1.RelatedUser in
            let profile =
                fresh[row.peer] ?? row.cached ?? DirectoryProfile(userID: row.peer, displayName: "", pictureURL: "")
            if let current = fresh[row.peer], current != row.cached { changed.append(current) }
            return SocialV1.RelatedUser(
                userId: row.peer.hexString, displayName: profile.displayName, pictureUrl: profile.pictureURL,
                sinceUnixMs: row.since.microsecondsSinceEpoch / 1000)
        }
        if !changed.isEmpty { try await store(changed, appID: appID) }
        return users
    }

    /// Writes profiles fetched from identity, as when a write names a user.
    func store(_ profiles: [DirectoryProfile], appID: RaveID) async throws {
        guard !profiles.isEmpty else { return }
        try await pool.execute(
            Self.upsert,
            [appID, profiles.map(\.userID), profiles.map(\.displayName), profiles.map(\.pictureURL)])
    }
}
