import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// A deletion as stored (`account_deletions`, migration 0013).
struct AccountDeletionRecord: Sendable {
    var id: RaveID
    var userID: RaveID
    var status: IdentityV1.AccountDeletionStatus
    var message: IdentityV1.AccountDeletion
}

/// Account deletions: scheduling, cancelling, starting and completing them.
///
/// `Domain/AccountDeletions.swift` says when each happens. Every method runs on the database or transaction it is
/// given.
struct AccountDeletionStore: Sendable {
    let database: any PostgresQueryable

    static let columns = """
        m.id, m.seq, m.user_id, m.status, m.requested_by, m.requested_at, m.due_at, m.started_at, m.completed_at,
        m.cancelled_at, m.cancelled_by, \(SagaParticipantStore.deletions.answerColumns)
        """
    static let insert = PostgresStatement(
        name: "identity_deletion_insert",
        sql: """
            INSERT INTO account_deletions AS m (id, user_id, status, requested_by, requested_at, due_at)
            VALUES ($1, $2, 'scheduled', $3, $4, $5) RETURNING \(columns)
            """)
    /// The user's deletion in progress (scheduled or started), locked for the transaction.
    static let selectLive = PostgresStatement(
        name: "identity_deletion_select_live",
        sql: """
            SELECT \(columns) FROM account_deletions m
            WHERE m.user_id = $1 AND m.status IN ('scheduled', 'started') FOR UPDATE OF m
            """)
    /// The user's latest deletion, whatever its status.
    static let selectLatest = PostgresStatement(
        name: "identity_deletion_select_latest",
        sql: "SELECT \(columns) FROM account_deletions m WHERE m.user_id = $1 ORDER BY m.seq DESC LIMIT 1")
    /// Which of the users are deleted or have a deletion in progress.
    static let selectBeingDeleted = PostgresStatement(
        name: "identity_deletion_select_being_deleted",
        sql: """
            SELECT u.id FROM users u WHERE u.id = ANY($1) AND (u.deleted_at IS NOT NULL OR EXISTS (
                SELECT 1 FROM account_deletions d WHERE d.user_id = u.id AND d.status IN ('scheduled', 'started')))
            """)
    static let selectByID = PostgresStatement(
        name: "identity_deletion_select", sql: "SELECT \(columns) FROM account_deletions m WHERE m.id = $1")
    /// A login cancels the user's scheduled deletion; a started one is not touched (its row lock makes a login
    /// racing the start wait for it, and then find it started).
    static let cancel = PostgresStatement(
        name: "identity_deletion_cancel",
        sql: """
            UPDATE account_deletions SET status = 'cancelled', cancelled_at = $2, cancelled_by = $3
            WHERE user_id = $1 AND status = 'scheduled' RETURNING id
            """)
    static let selectDeleted = PostgresStatement(
        name: "identity_deletion_user_deleted", sql: "SELECT deleted_at IS NOT NULL AS deleted FROM users WHERE id = $1"
    )
    /// Scheduled deletions due at `$1`, oldest first; rows another replica is starting are skipped.
    static let selectDue = PostgresStatement(
        name: "identity_deletion_select_due",
        sql: """
            SELECT id FROM account_deletions WHERE status = 'scheduled' AND due_at <= $1
            ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED
            """)
    /// Locks a scheduled deletion for starting it; nothing when it is no longer scheduled or another transaction
    /// holds it.
    static let lockScheduled = PostgresStatement(
        name: "identity_deletion_lock_scheduled",
        sql: "SELECT user_id FROM account_deletions WHERE id = $1 AND status = 'scheduled' FOR UPDATE SKIP LOCKED")
    static let markStarted = PostgresStatement(
        name: "identity_deletion_mark_started",
        sql: """
            UPDATE account_deletions SET status = CASE WHEN $5 THEN 'completed' ELSE 'started' END, started_at = $2,
                due_at = least(due_at, $2), completed_at = CASE WHEN $5 THEN $2 END,
                tombstone_id = CASE WHEN $5 THEN NULL ELSE $3 END,
                merged_user_ids = CASE WHEN $5 THEN '{}' ELSE $4 END
            WHERE id = $1
            """)
    static let insertParticipant = PostgresStatement(
        name: "identity_deletion_insert_participant",
        sql: "INSERT INTO account_deletion_participants (deletion_id, participant) VALUES ($1, $2)")
    /// What a started deletion's participants are told; nothing once it completed (the tombstone is forgotten).
    static let selectErasure = PostgresStatement(
        name: "identity_deletion_select_erasure",
        sql: """
            SELECT user_id, merged_user_ids, tombstone_id FROM account_deletions
            WHERE id = $1 AND status = 'started'
            """)
    /// Completes a started deletion once every participant acknowledged.
    ///
    /// The tombstone and the merged ids are forgotten. Returns the ids erased, for `scrubEvents`.
    static let complete = PostgresStatement(
        name: "identity_deletion_complete",
        sql: """
            UPDATE account_deletions d SET status = 'completed', completed_at = now(), tombstone_id = NULL,
                merged_user_ids = '{}'
            FROM (SELECT id, user_id, merged_user_ids FROM account_deletions WHERE id = $1 FOR UPDATE) old
            WHERE d.id = old.id AND d.status = 'started' AND NOT EXISTS (
                SELECT 1 FROM account_deletion_participants WHERE deletion_id = $1 AND acknowledged_at IS NULL)
            RETURNING old.user_id, old.merged_user_ids
            """)
    /// Empties the payloads of the delivered merge events (topic `$2`) that name an erased id (`$1`, hex).
    ///
    /// They linked the merged ids to the user. Their rows stay (the outbox keeps delivered rows); rows a dispatcher
    /// holds are skipped (it is delivering other events of their batch).
    static let scrubEvents = PostgresStatement(
        name: "identity_deletion_scrub_events",
        sql: """
            UPDATE outbox_events SET payload = '\\x' WHERE id IN (
                SELECT id FROM outbox_events
                WHERE topic = $2 AND delivered_at IS NOT NULL AND octet_length(payload) > 0 AND EXISTS (
                    SELECT 1 FROM unnest($1::text[]) AS erased (hex)
                    WHERE position(convert_to(erased.hex, 'UTF8') IN payload) > 0)
                FOR UPDATE SKIP LOCKED)
            """)
    /// Newest first, after the cursor `$3` (a `seq`) when given; `$1` status and `$2` user filter when not NULL.
    static let selectPage = PostgresStatement(
        name: "identity_deletion_select_page",
        sql: """
            SELECT \(columns) FROM account_deletions m
            WHERE ($1::text IS NULL OR m.status = $1) AND ($2::uuid IS NULL OR m.user_id = $2)
                AND ($3::bigint IS NULL OR m.seq < $3)
            ORDER BY m.seq DESC LIMIT $4
            """)

    // MARK: - Scheduling and cancelling

    /// Schedules the deletion of `userID`, due at `due`.
    func schedule(
        userID: RaveID, requestedBy: IdentityV1.AccountDeletionRequester, at now: Date, due: Date
    ) async throws -> AccountDeletionRecord {
        let row = try await database.execute(
            Self.insert, [RaveID.random(), userID, Self.name(requestedBy), now, due]
        )[0]
        return try Self.record(row)
    }

    /// The user's deletion in progress (scheduled or started), locked until the transaction ends.
    func live(userID: RaveID) async throws -> AccountDeletionRecord? {
        try await database.execute(Self.selectLive, [userID]).first.map(Self.record)
    }

    func latest(userID: RaveID) async throws -> AccountDeletionRecord? {
        try await database.execute(Self.selectLatest, [userID]).first.map(Self.record)
    }

    /// The users among `ids` that are deleted or have a deletion in progress.
    func beingDeleted(_ ids: [RaveID]) async throws -> [RaveID] {
        try await database.execute(Self.selectBeingDeleted, [ids]).map { try $0.decode(RaveID.self, column: "id") }
    }

    func deletion(_ id: RaveID) async throws -> AccountDeletionRecord? {
        try await database.execute(Self.selectByID, [id]).first.map(Self.record)
    }

    /// Cancels the user's scheduled deletion (`by` "login" or "operator"); false when none was scheduled.
    func cancel(userID: RaveID, at now: Date, by: String) async throws -> Bool {
        try await !database.execute(Self.cancel, [userID, now, by]).isEmpty
    }

    /// Whether the user's data was erased (false for an unknown id).
    func isDeleted(_ userID: RaveID) async throws -> Bool {
        try await database.execute(Self.selectDeleted, [userID]).first?.decode(Bool.self, column: "deleted") ?? false
    }

    /// Up to `limit` scheduled deletions due at `now`, locked (skipping those another transaction holds).
    func due(at now: Date, limit: Int) async throws -> [RaveID] {
        try await database.execute(Self.selectDue, [now, Int64(limit)]).map { try $0.decode(RaveID.self, column: "id") }
    }

    /// A page of deletions, newest first.
    func page(
        status: IdentityV1.AccountDeletionStatus?, userID: RaveID?, before cursor: Int64?, limit: Int
    ) async throws -> [(seq: Int64, deletion: IdentityV1.AccountDeletion)] {
        try await database.execute(
            Self.selectPage, [status.map(Self.name), userID, cursor, Int64(limit)]
        ).map { row in (try row.decode(Int64.self, column: "seq"), try Self.record(row).message) }
    }

    // MARK: - Starting and completing

    /// Locks the scheduled deletion `id` for starting it; its user, or nil when it is no longer scheduled (or
    /// another replica is starting it).
    func lockScheduled(_ id: RaveID) async throws -> RaveID? {
        try await database.execute(Self.lockScheduled, [id]).first?.decode(RaveID.self, column: "user_id")
    }

    /// Marks the deletion started with its tombstone and the merged ids it erases, or completed at once when no
    /// participant must hear of it.
    func markStarted(
        _ id: RaveID, at now: Date, tombstone: RaveID, mergedUserIDs: [RaveID], completed: Bool
    ) async throws {
        _ = try await database.execute(Self.markStarted, [id, now, tombstone, mergedUserIDs, completed])
    }

    func addParticipant(deletionID: RaveID, participant: String) async throws {
        _ = try await database.execute(Self.insertParticipant, [deletionID, participant])
    }

    /// The request a started deletion's participants get; nil once it completed (or for an unknown id).
    func erasureRequest(_ id: RaveID) async throws -> ErasureV1.EraseUserRequest? {
        guard let row = try await database.execute(Self.selectErasure, [id]).first else { return nil }
        return ErasureV1.EraseUserRequest(
            erasureId: id.hex, userId: try row.decode(RaveID.self, column: "user_id").hex,
            mergedUserIds: try row.decode([RaveID].self, column: "merged_user_ids").map(\.hex),
            tombstoneId: try row.decode(RaveID.self, column: "tombstone_id").hex)
    }

    /// Completes the deletion when every participant acknowledged (forgetting its tombstone), and empties the delivered
    /// merge events (`mergeTopic`) that named the erased ids; false when some participant has not acknowledged yet.
    func completeIfAcknowledged(_ id: RaveID, mergeTopic: String) async throws -> Bool {
        guard let row = try await database.execute(Self.complete, [id]).first else { return false }
        let erased = [try row.decode(RaveID.self, column: "user_id")] + (try row.decode(column: "merged_user_ids"))
        _ = try await database.execute(Self.scrubEvents, [erased.map(\.hex), mergeTopic])
        return true
    }

    // MARK: - Rows

    static func record(_ row: PostgresRow) throws -> AccountDeletionRecord {
        let id = try row.decode(RaveID.self, column: "id")
        let userID = try row.decode(RaveID.self, column: "user_id")
        let status = status(try row.decode(column: "status"))
        func milliseconds(_ column: String) throws -> Int64 {
            try row.decode(Date?.self, column: column)?.unixMilliseconds ?? 0
        }
        let message = IdentityV1.AccountDeletion(
            deletionId: id.hex, userId: userID.hex, status: status,
            requestedBy: try row.decode(String.self, column: "requested_by") == "player" ? .player : .operator,
            requestedAtUnixMs: try milliseconds("requested_at"), dueAtUnixMs: try milliseconds("due_at"),
            startedAtUnixMs: try milliseconds("started_at"), completedAtUnixMs: try milliseconds("completed_at"),
            cancelledAtUnixMs: try milliseconds("cancelled_at"),
            cancelledBy: cancellation(try row.decode(String?.self, column: "cancelled_by")),
            acknowledgedBy: try row.decode(column: "acknowledged"),
            pendingParticipants: status == .started ? try row.decode(column: "pending") : [])
        return AccountDeletionRecord(id: id, userID: userID, status: status, message: message)
    }

    static func status(_ name: String) -> IdentityV1.AccountDeletionStatus {
        switch name {
        case "scheduled": .scheduled
        case "cancelled": .cancelled
        case "started": .started
        case "completed": .completed
        default: .unspecified
        }
    }

    static func name(_ status: IdentityV1.AccountDeletionStatus) -> String {
        switch status {
        case .scheduled: "scheduled"
        case .cancelled: "cancelled"
        case .started: "started"
        case .completed: "completed"
        default: "unspecified"
        }
    }

    static func name(_ requester: IdentityV1.AccountDeletionRequester) -> String {
        requester == .player ? "player" : "operator"
    }

    static func cancellation(_ name: String?) -> IdentityV1.AccountDeletionCancellation {
        switch name {
        case "login": .login
        case "operator": .operator
        default: .unspecified
        }
    }
}
