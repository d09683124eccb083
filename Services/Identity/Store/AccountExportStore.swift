import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// An export as stored (`account_exports`, migration 0015).
struct AccountExportRecord: Sendable {
    var id: RaveID
    var userID: RaveID
    var status: IdentityV1.AccountExportStatus
    var requestedBy: IdentityV1.AccountExportRequester
    var appID: RaveID?
    var language: String
    var createdAt: Date
    var failingSince: Date?
    /// Attempts so far (the claim of the current one included).
    var attempts: Int
    var sizeBytes: Int64
    var sha256: [UInt8]
    var message: IdentityV1.AccountExport
}

/// Account exports: asking for them, the worker's claims and outcomes, the archive's pieces, expiry.
///
/// `Domain/AccountExports.swift` says when each happens. Every method runs on the database or transaction it is
/// given.
struct AccountExportStore: Sendable {
    let database: any PostgresQueryable

    /// The largest piece of an archive stored in one row, and answered by one download call.
    static let chunkSize = 1 << 20

    static let columns = """
        e.id, e.user_id, e.status, e.requested_by, e.app_id, e.language, e.created_at, e.failing_since, e.last_error,
        e.ready_at, e.expires_at, e.failed_at, e.size_bytes, e.sha256, e.attempts
        """
    static let insert = PostgresStatement(
        name: "identity_export_insert",
        sql: """
            INSERT INTO account_exports AS e (id, user_id, status, requested_by, app_id, language, created_at,
                next_attempt_at)
            VALUES ($1, $2, 'pending', $3, $4, $5, $6, $6)
            ON CONFLICT (user_id) WHERE status = 'pending' DO NOTHING RETURNING \(columns)
            """)
    /// The user's export in progress, locked for the transaction (a second request waits, then finds it).
    static let selectPending = PostgresStatement(
        name: "identity_export_select_pending",
        sql: "SELECT \(columns) FROM account_exports e WHERE e.user_id = $1 AND e.status = 'pending' FOR UPDATE")
    /// The player's latest export that counts against the limit (asked by the player, not failed) since `$2`.
    static let selectCounted = PostgresStatement(
        name: "identity_export_select_counted",
        sql: """
            SELECT max(created_at) AS latest FROM account_exports
            WHERE user_id = $1 AND requested_by = 'player' AND status <> 'failed' AND created_at > $2
            """)
    static let selectByID = PostgresStatement(
        name: "identity_export_select", sql: "SELECT \(columns) FROM account_exports e WHERE e.id = $1")
    static let selectLatest = PostgresStatement(
        name: "identity_export_select_latest",
        sql: "SELECT \(columns) FROM account_exports e WHERE e.user_id = $1 ORDER BY e.created_at DESC LIMIT 1")
    /// Takes the pending export whose time has come (skipping those another replica holds) and moves its next
    /// attempt past the lease `$2`, so a worker that dies leaves it to another after the lease.
    static let claim = PostgresStatement(
        name: "identity_export_claim",
        sql: """
            UPDATE account_exports e SET next_attempt_at = $2, attempts = e.attempts + 1
            WHERE e.id = (
                SELECT id FROM account_exports WHERE status = 'pending' AND next_attempt_at <= $1
                ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING \(columns)
            """)
    static let recordFailure = PostgresStatement(
        name: "identity_export_record_failure",
        sql: """
            UPDATE account_exports SET last_error = $2, failing_since = coalesce(failing_since, $3),
                next_attempt_at = $4
            WHERE id = $1 AND status = 'pending'
            """)
    static let markFailed = PostgresStatement(
        name: "identity_export_mark_failed",
        sql: """
            UPDATE account_exports SET status = 'failed', failed_at = $2, last_error = $3
            WHERE id = $1 AND status = 'pending'
            """)
    static let lockPending = PostgresStatement(
        name: "identity_export_lock_pending",
        sql: "SELECT \(columns) FROM account_exports e WHERE e.id = $1 AND e.status = 'pending' FOR UPDATE")
    static let insertChunk = PostgresStatement(
        name: "identity_export_insert_chunk",
        sql: "INSERT INTO account_export_chunks (export_id, seq, start_at, data) VALUES ($1, $2, $3, $4)")
    static let markReady = PostgresStatement(
        name: "identity_export_mark_ready",
        sql: """
            UPDATE account_exports SET status = 'ready', ready_at = $2, expires_at = $3, size_bytes = $4, sha256 = $5,
                last_error = NULL, failing_since = NULL
            WHERE id = $1 AND status = 'pending'
            """)
    /// Ready exports expired at `$1` (at most `$2` per call, skipping those another replica holds): their pieces
    /// are deleted and they become `expired`.
    static let expire = PostgresStatement(
        name: "identity_export_expire",
        sql: """
            WITH due AS (
                SELECT id FROM account_exports WHERE status = 'ready' AND expires_at <= $1
                ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED
            ), pieces AS (
                DELETE FROM account_export_chunks WHERE export_id IN (SELECT id FROM due)
            )
            UPDATE account_exports SET status = 'expired' WHERE id IN (SELECT id FROM due) RETURNING id
            """)
    /// The piece of the archive that holds byte `$2`.
    static let selectChunk = PostgresStatement(
        name: "identity_export_select_chunk",
        sql: """
            SELECT start_at, data FROM account_export_chunks WHERE export_id = $1 AND start_at <= $2
            ORDER BY seq DESC LIMIT 1
            """)
    /// Whether the user played an application of the publisher (an operator's publisher scope over players).
    static let selectPlayedPublisher = PostgresStatement(
        name: "identity_export_played_publisher",
        sql: """
            SELECT EXISTS (
                SELECT 1 FROM app_users au JOIN applications a ON a.id = au.app_id
                WHERE au.user_id = $1 AND a.publisher_id = $2) AS played
            """)
    /// The user's email when it is verified (the ready mail goes only there).
    static let selectVerifiedEmail = PostgresStatement(
        name: "identity_export_verified_email",
        sql: "SELECT email FROM users WHERE id = $1 AND email_verified AND deleted_at IS NULL AND email IS NOT NULL")
    /// The application a user played last, for the mail of an export an operator asked for.
    static let selectLastApp = PostgresStatement(
        name: "identity_export_last_app",
        sql: "SELECT app_id FROM app_users WHERE user_id = $1 ORDER BY first_seen_at DESC LIMIT 1")

    // MARK: - Asking

    /// The new pending export; nil when another request's export in progress committed first.
    func insert(
        userID: RaveID, requestedBy: IdentityV1.AccountExportRequester, appID: RaveID?, language: String, at now: Date
    ) async throws -> AccountExportRecord? {
        try await database.execute(
            Self.insert,
            [RaveID.random(), userID, requestedBy == .player ? "player" : "operator", appID, language, now]
        ).first.map(Self.record)
    }

    func pending(userID: RaveID) async throws -> AccountExportRecord? {
        try await database.execute(Self.selectPending, [userID]).first.map(Self.record)
    }

    /// When the player last asked for an export that counts against the limit, since `since`.
    func latestCounted(userID: RaveID, since: Date) async throws -> Date? {
        try await database.execute(Self.selectCounted, [userID, since]).first?.decode(Date?.self, column: "latest")
    }

    func export(_ id: RaveID) async throws -> AccountExportRecord? {
        try await database.execute(Self.selectByID, [id]).first.map(Self.record)
    }

    func latest(userID: RaveID) async throws -> AccountExportRecord? {
        try await database.execute(Self.selectLatest, [userID]).first.map(Self.record)
    }

    func playedPublisher(userID: RaveID, publisherID: RaveID) async throws -> Bool {
        try await database.execute(Self.selectPlayedPublisher, [userID, publisherID]).first?.decode(
            Bool.self, column: "played") ?? false
    }

    func verifiedEmail(userID: RaveID) async throws -> String? {
        try await database.execute(Self.selectVerifiedEmail, [userID]).first?.decode(String.self, column: "email")
    }

    func lastApp(userID: RaveID) async throws -> RaveID? {
        try await database.execute(Self.selectLastApp, [userID]).first?.decode(RaveID.self, column: "app_id")
    }

    // MARK: - The worker

    /// The next pending export due at `now`, claimed until `leaseUntil`; nil when none is due.
    func claim(at now: Date, leaseUntil: Date) async throws -> AccountExportRecord? {
        try await database.execute(Self.claim, [now, leaseUntil]).first.map(Self.record)
    }

    /// Records a failed attempt and when to try again; the start of the failures is kept.
    func recordFailure(_ id: RaveID, error: String, at now: Date, retryAt: Date) async throws {
        _ = try await database.execute(Self.recordFailure, [id, String(error.prefix(1000)), now, retryAt])
    }

    func markFailed(_ id: RaveID, error: String, at now: Date) async throws {
        _ = try await database.execute(Self.markFailed, [id, now, String(error.prefix(1000))])
    }

    func lockPending(_ id: RaveID) async throws -> AccountExportRecord? {
        try await database.execute(Self.lockPending, [id]).first.map(Self.record)
    }

    /// Stores `archive` in pieces of `chunkSize` and marks the export ready until `expiresAt`.
    func storeArchive(_ id: RaveID, archive: [UInt8], sha256: [UInt8], at now: Date, expiresAt: Date) async throws {
        var start = 0
        var seq: Int32 = 0
        while start < archive.count {
            let end = min(start + Self.chunkSize, archive.count)
            _ = try await database.execute(
                Self.insertChunk, [id, seq, Int64(start), Array(archive[start..<end])])
            start = end
            seq += 1
        }
        _ = try await database.execute(Self.markReady, [id, now, expiresAt, Int64(archive.count), sha256])
    }

    /// Expires up to `limit` ready exports whose time has passed; how many.
    func expire(at now: Date, limit: Int) async throws -> Int {
        try await database.execute(Self.expire, [now, Int64(limit)]).count
    }

    /// The piece holding byte `offset`: where it starts and its bytes.
    func chunk(exportID: RaveID, holding offset: Int64) async throws -> (start: Int64, data: [UInt8])? {
        guard let row = try await database.execute(Self.selectChunk, [exportID, offset]).first else { return nil }
        return (try row.decode(Int64.self, column: "start_at"), try row.decode([UInt8].self, column: "data"))
    }

    // MARK: - Rows

    static func record(_ row: PostgresRow) throws -> AccountExportRecord {
        let id = try row.decode(RaveID.self, column: "id")
        let userID = try row.decode(RaveID.self, column: "user_id")
        let status = status(try row.decode(column: "status"))
        let requestedBy: IdentityV1.AccountExportRequester =
            try row.decode(String.self, column: "requested_by") == "player" ? .player : .operator
        func milliseconds(_ column: String) throws -> Int64 {
            try row.decode(Date?.self, column: column)?.unixMilliseconds ?? 0
        }
        let createdAt = try row.decode(Date.self, column: "created_at")
        let size = try row.decode(Int64?.self, column: "size_bytes") ?? 0
        let digest = try row.decode([UInt8]?.self, column: "sha256") ?? []
        let message = IdentityV1.AccountExport(
            exportId: id.hex, userId: userID.hex, status: status, requestedBy: requestedBy,
            createdAtUnixMs: createdAt.unixMilliseconds, readyAtUnixMs: try milliseconds("ready_at"),
            expiresAtUnixMs: try milliseconds("expires_at"), sizeBytes: size, sha256: hex(digest),
            error: try row.decode(String?.self, column: "last_error") ?? "",
            failedAtUnixMs: try milliseconds("failed_at"))
        return AccountExportRecord(
            id: id, userID: userID, status: status, requestedBy: requestedBy,
            appID: try row.decode(RaveID?.self, column: "app_id"), language: try row.decode(column: "language"),
            createdAt: createdAt, failingSince: try row.decode(Date?.self, column: "failing_since"),
            attempts: Int(try row.decode(Int32.self, column: "attempts")), sizeBytes: size,
            sha256: digest, message: message)
    }

    static func status(_ name: String) -> IdentityV1.AccountExportStatus {
        switch name {
        case "pending": .pending
        case "ready": .ready
        case "failed": .failed
        case "expired": .expired
        default: .unspecified
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }
}
