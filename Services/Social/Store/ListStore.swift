import RaveMessages
import RavePostgres
import Synchronization

/// A relationship list as the service uses it.
struct RelationshipList: Sendable, Hashable {
    enum Kind: Int, Sendable {
        case friends = 1
        case followers = 2

        var message: SocialV1.ListKind { self == .friends ? .friends : .followers }
        var name: String { self == .friends ? "friends" : "followers" }
    }

    var id: Int64
    var key: String
    var kind: Kind
    var publisherID: RaveID
    /// nil for a global (publisher-wide) list.
    var appID: RaveID?
    var maxMembers: Int

    var message: SocialV1.RelationshipList {
        SocialV1.RelationshipList(
            key: key, kind: kind.message, scope: appID == nil ? .global : .application,
            ownerId: (appID ?? publisherID).hex, maxMembers: UInt32(maxMembers))
    }
}

/// Finds the list a key names for an application, creating the four default lists on first use, and keeps
/// custom lists (operators create them).
///
/// Lists never change once created, so resolved lists are cached per application and key.
final class ListStore: Sendable {
    /// Keys every application has without an operator creating them: its own lists and its publisher's.
    static let defaultKeys: [String: (kind: RelationshipList.Kind, global: Bool)] = [
        "friends": (.friends, false), "followers": (.followers, false),
        "global_friends": (.friends, true), "global_followers": (.followers, true),
    ]

    private static let columns = "list_id, publisher_id, app_id, key, kind, max_members"
    private static let selectDefault = PostgresStatement(
        name: "social_list_default",
        sql: """
            SELECT \(columns) FROM lists WHERE publisher_id = $1 AND key = $2
                AND COALESCE(app_id, '00000000-0000-0000-0000-000000000000') = COALESCE($3::uuid, '00000000-0000-0000-0000-000000000000')
            """)
    private static let insertList = PostgresStatement(
        name: "social_list_insert",
        sql: """
            INSERT INTO lists (publisher_id, app_id, key, kind, max_members) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT DO NOTHING RETURNING \(columns)
            """)
    private static let selectByKey = PostgresStatement(
        name: "social_list_by_key", sql: "SELECT \(columns) FROM lists WHERE publisher_id = $1 AND key = $2")
    private static let selectVisible = PostgresStatement(
        name: "social_list_visible",
        sql: "SELECT \(columns) FROM lists WHERE publisher_id = $1 AND (app_id IS NULL OR app_id = $2) ORDER BY key")

    let pool: PostgresPool
    let directory: any UserDirectory
    let defaultMaxMembers: Int
    private let cache = Mutex<[String: RelationshipList]>([:])

    init(pool: PostgresPool, directory: any UserDirectory, defaultMaxMembers: Int) {
        self.pool = pool
        self.directory = directory
        self.defaultMaxMembers = defaultMaxMembers
    }

    /// The list `key` names for `appID`, checked to be of `kind` when given.
    func resolve(_ key: String, appID: RaveID, kind: RelationshipList.Kind? = nil) async throws -> RelationshipList {
        let list = try await resolveAnyKind(key, appID: appID)
        if let kind, list.kind != kind {
            throw SocialError.failedPrecondition(
                "list \"\(key)\" is a \(list.kind.name) list; this method needs a \(kind.name) list")
        }
        return list
    }

    private func resolveAnyKind(_ key: String, appID: RaveID) async throws -> RelationshipList {
        try Self.validate(key)
        let cacheKey = appID.hex + "/" + key
        if let cached = cache.withLock({ $0[cacheKey] }) { return cached }
        let publisher = try await directory.publisher(ofApplication: appID)
        let list: RelationshipList
        if let defaults = Self.defaultKeys[key] {
            list = try await defaultList(
                key, kind: defaults.kind, publisher: publisher, app: defaults.global ? nil : appID)
        } else {
            guard let row = try await pool.execute(Self.selectByKey, [publisher, key]).first else {
                throw SocialError.notFound("no list with key \"\(key)\"")
            }
            list = try Self.decode(row)
            if let owner = list.appID, owner != appID {
                throw SocialError.permissionDenied("list \"\(key)\" belongs to another application")
            }
        }
        cache.withLock { $0[cacheKey] = list }
        return list
    }

    /// Created on first use; the unique index makes concurrent first uses agree on one row.
    private func defaultList(
        _ key: String, kind: RelationshipList.Kind, publisher: RaveID, app: RaveID?
    ) async throws -> RelationshipList {
        if let row = try await pool.execute(Self.selectDefault, [publisher, key, app]).first {
            return try Self.decode(row)
        }
        let inserted = try await pool.execute(
            Self.insertList, [publisher, app, key, kind.rawValue, defaultMaxMembers])
        if let row = inserted.first { return try Self.decode(row) }
        // Another replica created it between the two statements.
        guard let row = try await pool.execute(Self.selectDefault, [publisher, key, app]).first else {
            throw SocialError.unavailable("list \"\(key)\" could not be created")
        }
        return try Self.decode(row)
    }

    /// An operator's custom list; its key must be unused within the publisher.
    func create(
        key: String, kind: RelationshipList.Kind, global: Bool, appID: RaveID, maxMembers: Int?
    ) async throws -> RelationshipList {
        try Self.validate(key)
        guard Self.defaultKeys[key] == nil else {
            throw SocialError.alreadyExists("\"\(key)\" is a default list key; choose another")
        }
        let publisher = try await directory.publisher(ofApplication: appID)
        // The unique index allows one key per application and one global key; the publisher's lock makes the check
        // and the insert one step, so concurrent creations queue rather than conflict.
        return try await pool.transaction(retryOnSerializationFailure: true) { transaction in
            try await RelationshipLocks.lock([publisher], in: transaction)
            guard try await transaction.execute(Self.selectByKey, [publisher, key]).isEmpty else {
                throw SocialError.alreadyExists("the publisher already has a list with key \"\(key)\"")
            }
            let rows = try await transaction.execute(
                Self.insertList,
                [publisher, global ? nil : appID, key, kind.rawValue, maxMembers ?? defaultMaxMembers])
            guard let row = rows.first else { throw SocialError.alreadyExists("list \"\(key)\" already exists") }
            return try Self.decode(row)
        }
    }

    /// Every list `appID` can use: its own and its publisher's, the defaults included.
    func visibleLists(appID: RaveID) async throws -> [RelationshipList] {
        for key in Self.defaultKeys.keys { _ = try await resolve(key, appID: appID) }
        let publisher = try await directory.publisher(ofApplication: appID)
        return try await pool.execute(Self.selectVisible, [publisher, appID]).map(Self.decode)
    }

    static func validate(_ key: String) throws(SocialError) {
        guard (1...64).contains(key.utf8.count),
            key.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f || $0 == 0x2d }
            )
        else {
            throw .invalidArgument("list_key must be 1…64 characters of a-z, 0-9, _ and -, got \"\(key.prefix(70))\"")
        }
    }

    private static func decode(_ row: PostgresRow) throws -> RelationshipList {
        let kind: Int = try row.decode(column: "kind")
        let maxMembers: Int32 = try row.decode(column: "max_members")
        return RelationshipList(
            id: try row.decode(column: "list_id"), key: try row.decode(column: "key"),
            kind: RelationshipList.Kind(rawValue: kind) ?? .friends,
            publisherID: try row.decode(column: "publisher_id"),
            appID: try row.decode(RaveID?.self, column: "app_id"), maxMembers: Int(maxMembers))
    }
}
