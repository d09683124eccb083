import RaveMessages
import RavePostgres

/// One source's report of a contact, as stored.
struct ContactEntry: Sendable, Hashable {
    /// "rave:<id>" when matched, else "<source>:<external id>".
    var key: String
    var userID: RaveID?
    var displayName: String
    var pictureURL: String
    var source: SocialV1.ContactSource
    var thirdParty: String
    var externalID: String

    /// The key of a contact: matched contacts share one per Rave user, so two sources naming the same player
    /// make one contact with two sources.
    static func key(userID: RaveID?, source: SocialV1.ContactSource, thirdParty: String, externalID: String) -> String {
        if let userID { return "rave:" + userID.hex }
        switch source {
        case .facebook: return "facebook:" + externalID
        case .google: return "google:" + externalID
        case .phonebook: return "phonebook:" + externalID.lowercased()
        case .thirdParty: return "third_party:\(thirdParty):" + externalID
        case .rave, .unspecified, .unrecognized: return "rave:" + externalID
        }
    }
}

/// A stored contact with every source that reported it.
struct ContactRecord: Sendable, Hashable {
    var key: String
    var userID: RaveID?
    var displayName: String
    var pictureURL: String
    var sources: [SocialV1.ContactSource]
    var thirdParty: String
}

/// A user's contacts: added by hand (Rave usernames, phonebook emails) or synced per source.
struct ContactStore: Sendable {
    let pool: PostgresPool

    private static let upsertContacts = PostgresStatement(
        name: "social_contacts_upsert",
        sql: """
            INSERT INTO contacts (owner_id, contact_key, user_id, display_name, picture_url)
            SELECT DISTINCT ON (u.contact_key) $1, u.contact_key, NULLIF(u.user_id, '')::uuid, u.display_name, u.picture_url
            FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS u (contact_key, user_id, display_name, picture_url)
            ORDER BY u.contact_key, u.display_name DESC
            ON CONFLICT (owner_id, contact_key) DO UPDATE
            SET display_name = CASE WHEN EXCLUDED.display_name <> '' THEN EXCLUDED.display_name ELSE contacts.display_name END,
                picture_url = CASE WHEN EXCLUDED.picture_url <> '' THEN EXCLUDED.picture_url ELSE contacts.picture_url END
            """)
    private static let insertSources = PostgresStatement(
        name: "social_contact_sources_insert",
        sql: """
            INSERT INTO contact_sources (owner_id, contact_key, source, third_party, external_id)
            SELECT $1, u.contact_key, u.source, u.third_party, u.external_id
            FROM unnest($2::text[], $3::int8[], $4::text[], $5::text[]) AS u (contact_key, source, third_party, external_id)
            ON CONFLICT DO NOTHING
            """)
    private static let deleteSource = PostgresStatement(
        name: "social_contact_sources_delete",
        sql: "DELETE FROM contact_sources WHERE owner_id = $1 AND source = $2 AND third_party = $3")
    private static let deleteOrphans = PostgresStatement(
        name: "social_contacts_orphans",
        sql: """
            DELETE FROM contacts c WHERE c.owner_id = $1
                AND NOT EXISTS (SELECT 1 FROM contact_sources s WHERE s.owner_id = c.owner_id AND s.contact_key = c.contact_key)
            """)
    private static let deleteContact = PostgresStatement(
        name: "social_contact_delete",
        sql:
            "DELETE FROM contacts WHERE owner_id = $1 AND (contact_key = $2 OR contact_key = 'rave:' || $2) RETURNING 1"
    )
    private static let selectAll = PostgresStatement(
        name: "social_contacts_all",
        sql: """
            SELECT c.contact_key, c.user_id, c.display_name, c.picture_url, s.source, s.third_party
            FROM contacts c JOIN contact_sources s ON s.owner_id = c.owner_id AND s.contact_key = c.contact_key
            WHERE c.owner_id = $1 ORDER BY c.contact_key, s.source
            """)

    /// Adds contacts (or new sources of existing ones).
    func add(_ entries: [ContactEntry], owner: RaveID) async throws {
        guard !entries.isEmpty else { return }
        try await pool.transaction { try await Self.write(entries, owner: owner, in: $0) }
    }

    /// Replaces everything `source` (and third party) reported before with `entries`.
    func replace(
        source: SocialV1.ContactSource, thirdParty: String, with entries: [ContactEntry], owner: RaveID
    ) async throws {
        try await pool.transaction { transaction in
            try await transaction.execute(Self.deleteSource, [owner, Int(source.rawValue), thirdParty])
            try await Self.write(entries, owner: owner, in: transaction)
            try await transaction.execute(Self.deleteOrphans, [owner])
        }
    }

    /// Deletes a contact by key or by a matched contact's Rave ID; false when there was none.
    func delete(key: String, owner: RaveID) async throws -> Bool {
        try await !pool.execute(Self.deleteContact, [owner, key]).isEmpty
    }

    /// Every contact of the owner with its sources, by key.
    func contacts(of owner: RaveID) async throws -> [ContactRecord] {
        var records: [ContactRecord] = []
        for row in try await pool.execute(Self.selectAll, [owner]) {
            let key: String = try row.decode(column: "contact_key")
            let source = SocialV1.ContactSource(rawValue: Int32(try row.decode(Int.self, column: "source")))
            let thirdParty: String = try row.decode(column: "third_party")
            if records.last?.key == key {
                if !records[records.count - 1].sources.contains(source) {
                    records[records.count - 1].sources.append(source)
                }
                if !thirdParty.isEmpty { records[records.count - 1].thirdParty = thirdParty }
                continue
            }
            records.append(
                ContactRecord(
                    key: key, userID: try row.decode(RaveID?.self, column: "user_id"),
                    displayName: try row.decode(column: "display_name"),
                    pictureURL: try row.decode(column: "picture_url"),
                    sources: [source], thirdParty: thirdParty))
        }
        return records
    }

    private static func write(
        _ entries: [ContactEntry], owner: RaveID, in transaction: PostgresTransaction
    ) async throws {
        guard !entries.isEmpty else { return }
        try await transaction.execute(
            upsertContacts,
            [
                owner, entries.map(\.key), entries.map { $0.userID?.hex ?? "" }, entries.map(\.displayName),
                entries.map(\.pictureURL),
            ])
        try await transaction.execute(
            insertSources,
            [
                owner, entries.map(\.key), entries.map { Int($0.source.rawValue) }, entries.map(\.thirdParty),
                entries.map(\.externalID),
            ])
    }
}
