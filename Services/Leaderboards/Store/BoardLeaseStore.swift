import RavePostgres

/// What a take-or-renew found: the lease is now this instance's, or who holds it.
enum LeaseClaim: Sendable, Hashable {
    /// The lease is this instance's; `continued` says this instance already held it and nobody else did since, so
    /// an index built under the earlier lease is still exact.
    case taken(continued: Bool)
    /// Another instance holds it for about `remaining` more (by the database's clock).
    case heldElsewhere(address: String, remaining: Duration)
    /// Another instance took it concurrently and its row was not visible yet; asking again names it.
    case contended
}

/// A board's unexpired lease, as `ListBoardOwners` reports it.
struct BoardLease: Sendable, Hashable {
    var appID: String
    var key: String
    var ownerAddress: String
    var expiresUnixMilliseconds: Int64
}

/// The `board_leases` table: one row per board naming the instance that serves it and until when.
///
/// Every expiry is computed and compared with the database's clock (`now()`), so instances' clocks never meet.
struct BoardLeaseStore: Sendable {
    let pool: PostgresPool

    /// Takes the lease when there is none, it expired, or it is already ours; reports the owner otherwise.
    ///
    /// "Ours" is this process, or an earlier process at the same advertised address, which must be dead since it
    /// listened where we listen. `previous` is read from the statement's snapshot, before the upsert.
    static let take = PostgresStatement(
        name: "leaderboards_take_board_lease",
        sql: """
            WITH previous AS (
                SELECT owner_address, instance_id, expires_at FROM board_leases
                WHERE app_id = $1 AND leaderboard_key = $2),
            taken AS (
                INSERT INTO board_leases AS l (app_id, leaderboard_key, owner_address, instance_id, expires_at)
                VALUES ($1, $2, $3, $4, now() + $5::int8 * interval '1 millisecond')
                ON CONFLICT (app_id, leaderboard_key) DO UPDATE
                    SET owner_address = EXCLUDED.owner_address, instance_id = EXCLUDED.instance_id,
                        expires_at = EXCLUDED.expires_at
                    WHERE l.expires_at <= now() OR l.instance_id = EXCLUDED.instance_id
                       OR l.owner_address = EXCLUDED.owner_address
                RETURNING 1)
            SELECT EXISTS (SELECT 1 FROM taken) AS taken,
                   coalesce((SELECT instance_id = $4 FROM previous), false) AS continued,
                   (SELECT owner_address FROM previous) AS owner_address,
                   (SELECT greatest(0, extract(epoch FROM expires_at - now()) * 1000)::int8 FROM previous)
                       AS remaining_ms
            """)
    /// Extends every lease this process holds; the rows returned are the ones it still holds.
    static let renew = PostgresStatement(
        name: "leaderboards_renew_board_leases",
        sql: """
            UPDATE board_leases SET expires_at = now() + $2::int8 * interval '1 millisecond'
            WHERE instance_id = $1 RETURNING app_id, leaderboard_key
            """)
    static let release = PostgresStatement(
        name: "leaderboards_release_board_leases",
        sql: "DELETE FROM board_leases WHERE instance_id = $1")
    static let selectOwners = PostgresStatement(
        name: "leaderboards_select_board_owners",
        sql: """
            SELECT app_id, leaderboard_key, owner_address,
                   (extract(epoch FROM expires_at) * 1000)::int8 AS expires_unix_ms
            FROM board_leases WHERE expires_at > now() ORDER BY app_id, leaderboard_key
            """)

    /// Takes or renews the lease of one board for `duration`.
    func take(
        appID: String, key: String, address: String, instanceID: RaveID, duration: Duration
    ) async throws -> LeaseClaim {
        let rows = try await pool.execute(
            Self.take, [appID, key, address, instanceID, Self.milliseconds(duration)])
        guard let row = rows.first else { throw PostgresError(.client, "the lease statement returned no row") }
        if try row.decode(Bool.self, column: "taken") {
            return .taken(continued: try row.decode(Bool.self, column: "continued"))
        }
        guard let owner = try row.decode(String?.self, column: "owner_address") else { return .contended }
        let remaining = try row.decode(Int64?.self, column: "remaining_ms") ?? 0
        return .heldElsewhere(address: owner, remaining: .milliseconds(remaining))
    }

    /// Renews every lease `instanceID` holds for `duration`; returns the boards still held.
    func renewAll(instanceID: RaveID, duration: Duration) async throws -> Set<BoardName> {
        let rows = try await pool.execute(Self.renew, [instanceID, Self.milliseconds(duration)])
        var held: Set<BoardName> = []
        for row in rows {
            held.insert(
                BoardName(
                    appID: try row.decode(String.self, column: "app_id"),
                    key: try row.decode(String.self, column: "leaderboard_key")))
        }
        return held
    }

    /// Gives up every lease of `instanceID`, so successors take its boards at once.
    func releaseAll(instanceID: RaveID) async throws {
        _ = try await pool.execute(Self.release, [instanceID])
    }

    /// Every unexpired lease.
    func owners() async throws -> [BoardLease] {
        try await pool.execute(Self.selectOwners, []).map { row in
            BoardLease(
                appID: try row.decode(String.self, column: "app_id"),
                key: try row.decode(String.self, column: "leaderboard_key"),
                ownerAddress: try row.decode(String.self, column: "owner_address"),
                expiresUnixMilliseconds: try row.decode(Int64.self, column: "expires_unix_ms"))
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}

/// A board by the name callers and the lease table use (the app and the board's key).
struct BoardName: Hashable, Sendable {
    var appID: String
    var key: String
}
