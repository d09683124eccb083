import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// A user's ban as stored: it applies until `until` (nil: until lifted).
struct BanRecord: Sendable, Hashable {
    var reason: String
    var until: Date?

    /// Whether the ban still applies at `now` (an expired ban stops applying by itself).
    func applies(at now: Date) -> Bool { until.map { $0 > now } ?? true }

    var info: IdentityV1.BanInfo {
        IdentityV1.BanInfo(reason: reason, untilUnixMs: until?.unixMilliseconds ?? 0)
    }
}

/// Bans (`user_bans`): at most one per user, always on the account itself, never on a merged-away id.
struct BanStore: Sendable {
    let database: any PostgresQueryable

    static let selectBan = PostgresStatement(
        name: "identity_select_ban", sql: "SELECT reason, until_at FROM user_bans WHERE user_id = $1")
    static let upsertBan = PostgresStatement(
        name: "identity_upsert_ban",
        sql: """
            INSERT INTO user_bans (user_id, reason, until_at, banned_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (user_id) DO UPDATE SET reason = EXCLUDED.reason, until_at = EXCLUDED.until_at,
                banned_at = EXCLUDED.banned_at
            """)
    static let deleteBan = PostgresStatement(
        name: "identity_delete_ban", sql: "DELETE FROM user_bans WHERE user_id = $1")

    /// The user's ban as stored, whether or not it still applies; nil when there is none.
    func ban(of userID: RaveID) async throws -> BanRecord? {
        guard let row = try await database.execute(Self.selectBan, [userID]).first else { return nil }
        return BanRecord(reason: try row.decode(column: "reason"), until: try row.decode(column: "until_at"))
    }

    /// Bans the user, replacing any earlier ban.
    func ban(_ userID: RaveID, _ ban: BanRecord, at now: Date) async throws {
        _ = try await database.execute(Self.upsertBan, [userID, ban.reason, ban.until, now])
    }

    /// Lifts the user's ban, if any.
    func lift(_ userID: RaveID) async throws {
        _ = try await database.execute(Self.deleteBan, [userID])
    }
}
