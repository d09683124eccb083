import RaveMessages
import RavePostgres

/// A gift type as stored, with the row id the other tables reference.
struct GiftTypeRecord: Sendable, Hashable {
    var id: Int64
    var appID: RaveID
    var key: String
    var name: String
    var imageURL: String
    var requestable: Bool
    var expirySeconds: Int64
    var dailyLimitPerSender: Int

    var message: GiftsV1.GiftType {
        GiftsV1.GiftType(
            key: key, name: name, imageUrl: imageURL, requestable: requestable, expirySeconds: expirySeconds,
            dailyLimitPerSender: UInt32(clamping: dailyLimitPerSender))
    }
}

/// Gift types per application (admin-defined).
struct GiftTypeStore: Sendable {
    let pool: PostgresPool
    /// What sends read: their type without a round trip (see `GiftTypeCache` for how fresh it is).
    let cache = GiftTypeCache()

    private static let columns = """
        id, app_id, key, name, image_url, requestable, expiry_seconds, daily_limit_per_sender
        """
    private static let insert = PostgresStatement(
        name: "gifts_type_insert",
        sql: """
            INSERT INTO gift_types (app_id, key, name, image_url, requestable, expiry_seconds, daily_limit_per_sender)
            VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (app_id, key) DO NOTHING RETURNING \(columns)
            """)
    private static let update = PostgresStatement(
        name: "gifts_type_update",
        sql: """
            UPDATE gift_types SET name = $3, image_url = $4, requestable = $5, expiry_seconds = $6,
                daily_limit_per_sender = $7, updated_at = now()
            WHERE app_id = $1 AND key = $2 RETURNING \(columns)
            """)
    private static let selectByKey = PostgresStatement(
        name: "gifts_type_by_key", sql: "SELECT \(columns) FROM gift_types WHERE app_id = $1 AND key = $2")
    private static let selectAll = PostgresStatement(
        name: "gifts_type_all", sql: "SELECT \(columns) FROM gift_types WHERE app_id = $1 ORDER BY key")

    /// ALREADY_EXISTS when the application has a type with this key.
    func create(_ type: GiftsV1.GiftType, appID: RaveID) async throws -> GiftTypeRecord {
        let rows = try await pool.execute(Self.insert, try Self.parameters(type, appID: appID))
        guard let row = rows.first else {
            throw GiftsError.alreadyExists("gift type \"\(type.key)\" already exists in this application")
        }
        let created = try Self.record(row)
        cache.remember(created)
        return created
    }

    func update(_ type: GiftsV1.GiftType, appID: RaveID) async throws -> GiftTypeRecord {
        let rows = try await pool.execute(Self.update, try Self.parameters(type, appID: appID))
        guard let row = rows.first else { throw GiftsError.unknownGiftType(type.key) }
        let updated = try Self.record(row)
        cache.remember(updated)
        return updated
    }

    /// NOT_FOUND for an unknown key.
    func find(_ key: String, appID: RaveID) async throws -> GiftTypeRecord {
        guard let row = try await pool.execute(Self.selectByKey, [appID, key]).first else {
            throw GiftsError.unknownGiftType(key)
        }
        return try Self.record(row)
    }

    /// The type a send names, from the cache when it was read in the last `GiftTypeCache.timeToLive`; NOT_FOUND
    /// for an unknown key.
    func forSending(_ key: String, appID: RaveID) async throws -> GiftTypeRecord {
        if let cached = cache.type(key, appID: appID) { return cached }
        let type = try await find(key, appID: appID)
        cache.remember(type)
        return type
    }

    func all(appID: RaveID) async throws -> [GiftTypeRecord] {
        try await pool.execute(Self.selectAll, [appID]).map(Self.record)
    }

    private static func parameters(
        _ type: GiftsV1.GiftType, appID: RaveID
    ) throws(GiftsError) -> [(any PostgresEncodable)?] {
        let key = try RequestLimits.giftTypeKey(type.key, field: "gift_type.key")
        guard (1...128).contains(type.name.utf8.count) else {
            throw .invalidArgument("gift_type.name must be 1…128 bytes, got \(type.name.utf8.count)")
        }
        guard type.imageUrl.utf8.count <= 2048 else { throw .invalidArgument("gift_type.image_url is over 2048 bytes") }
        let maximumExpiry: Int64 = 366 * 24 * 3600
        guard (0...maximumExpiry).contains(type.expirySeconds) else {
            throw .invalidArgument(
                "gift_type.expiry_seconds must be 0 (14 days) or 1…\(maximumExpiry), got \(type.expirySeconds)")
        }
        let expiry = type.expirySeconds == 0 ? RequestLimits.defaultExpirySeconds : type.expirySeconds
        guard type.dailyLimitPerSender <= 1_000_000 else {
            throw .invalidArgument("gift_type.daily_limit_per_sender must be 0…1000000")
        }
        return [
            appID, key, type.name, type.imageUrl, type.requestable, expiry, Int32(type.dailyLimitPerSender),
        ]
    }

    static func record(_ row: PostgresRow) throws -> GiftTypeRecord {
        GiftTypeRecord(
            id: try row.decode(Int64.self, column: "id"), appID: try row.decode(RaveID.self, column: "app_id"),
            key: try row.decode(String.self, column: "key"), name: try row.decode(String.self, column: "name"),
            imageURL: try row.decode(String.self, column: "image_url"),
            requestable: try row.decode(Bool.self, column: "requestable"),
            expirySeconds: try row.decode(Int64.self, column: "expiry_seconds"),
            dailyLimitPerSender: Int(try row.decode(Int32.self, column: "daily_limit_per_sender")))
    }
}
