import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// Who acted, as the audit log records it.
struct AuditActor: Sendable, Hashable {
    /// `admin_certificate` or `operator`.
    var kind: IdentityV1.AuditActorKind
    /// The admin certificate's common name, or the operator's email.
    var name: String
    /// The operator's id (actor kind operator).
    var operatorID: RaveID?

    var kindName: String { kind == .operator ? "operator" : "admin_certificate" }
}

/// One entry for the audit log, as a handler writes it.
struct AuditEntry: Sendable {
    var actor: AuditActor
    var action: IdentityV1.AuditAction
    var targetUserID: RaveID?
    var reason: String
    /// The target's state before and after, as JSON objects.
    var before: String
    var after: String
    /// The operator account acted on (operator actions).
    var targetOperatorID: RaveID? = nil
    /// The method called and its request as JSON (writes the gateway records).
    var method: String? = nil
    var request: String? = nil
}

/// The audit log of operator actions (`audit_events`): written in the transaction of the change it records, or by
/// the gateway before it forwards a write (with its outcome appended once the service answered, `audit_outcomes`);
/// never changed (the database refuses UPDATE, DELETE and TRUNCATE on both, migrations 0010 and 0014).
struct AuditStore: Sendable {
    let database: any PostgresQueryable

    static let insertEvent = PostgresStatement(
        name: "identity_insert_audit_event",
        sql: """
            INSERT INTO audit_events (occurred_at, actor_kind, actor, action, target_user_id, reason, before_state,
                after_state, operator_id, target_operator_id, method, request)
            VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9, $10, $11, $12::text::jsonb)
            RETURNING id
            """)
    static let insertOutcome = PostgresStatement(
        name: "identity_insert_audit_outcome",
        sql: """
            INSERT INTO audit_outcomes (event_id, finished_at, status_code, status_message)
            SELECT id, $2, $3, $4 FROM audit_events WHERE id = $1 AND action = 'admin_call'
            ON CONFLICT (event_id) DO NOTHING
            """)
    /// Newest first, after the cursor `$5` (an event id) when given; `$1`…`$4` and `$7`…`$9` filter when not NULL.
    ///
    /// Entries a service wrote in its change's transaction exist only when the change succeeded; gateway-recorded
    /// writes carry their outcome once it is appended.
    static let selectEvents = PostgresStatement(
        name: "identity_select_audit_events",
        sql: """
            SELECT e.id, e.occurred_at, e.actor_kind, e.actor, e.action, e.target_user_id, e.reason,
                e.before_state::text AS before, e.after_state::text AS after, e.operator_id, e.target_operator_id,
                coalesce(e.method, '') AS method, coalesce(e.request::text, '{}') AS request,
                e.action <> 'admin_call' OR o.event_id IS NOT NULL AS finished,
                coalesce(o.status_code, 0) AS status_code, coalesce(o.status_message, '') AS status_message
            FROM audit_events e LEFT JOIN audit_outcomes o ON o.event_id = e.id
            WHERE ($1::uuid IS NULL OR e.target_user_id = $1) AND ($2::text IS NULL OR e.action = $2)
                AND ($3::timestamptz IS NULL OR e.occurred_at >= $3) AND ($4::timestamptz IS NULL OR e.occurred_at < $4)
                AND ($5::bigint IS NULL OR e.id < $5) AND ($7::text IS NULL OR e.actor_kind = $7)
                AND ($8::uuid IS NULL OR e.operator_id = $8) AND ($9::text IS NULL OR e.method = $9)
            ORDER BY e.id DESC LIMIT $6
            """)

    /// What `ListAuditEvents` filters by; nil fields do not filter.
    struct Filter: Sendable {
        var targetUserID: RaveID?
        var action: IdentityV1.AuditAction?
        var since: Date?
        var before: Date?
        var actorKind: IdentityV1.AuditActorKind?
        var operatorID: RaveID?
        var method: String?
    }

    /// Appends an entry at `now`; returns its id.
    @discardableResult
    func append(_ entry: AuditEntry, at now: Date) async throws -> Int64 {
        let rows = try await database.execute(
            Self.insertEvent,
            [
                now, entry.actor.kindName, entry.actor.name, Self.name(entry.action), entry.targetUserID, entry.reason,
                entry.before, entry.after, entry.actor.operatorID, entry.targetOperatorID, entry.method, entry.request,
            ])
        return try rows[0].decode(Int64.self, column: "id")
    }

    /// Appends the outcome of a gateway-recorded write; false when `eventID` is no such write or already has one
    /// (the first outcome stays).
    func appendOutcome(eventID: Int64, code: Int32, message: String, at now: Date) async throws -> Bool {
        try await database.execute(Self.insertOutcome, [eventID, now, code, message]).affectedRowCount == 1
    }

    /// Up to `limit` events matching `filter`, newest first, older than the event `after` when given.
    func events(matching filter: Filter, after cursor: Int64?, limit: Int) async throws -> [IdentityV1.AuditEvent] {
        let rows = try await database.execute(
            Self.selectEvents,
            [
                filter.targetUserID, filter.action.map(Self.name), filter.since, filter.before, cursor,
                Int64(limit), filter.actorKind.map { $0 == .operator ? "operator" : "admin_certificate" },
                filter.operatorID, filter.method,
            ])
        return try rows.map { row in
            IdentityV1.AuditEvent(
                eventId: String(try row.decode(Int64.self, column: "id")),
                occurredAtUnixMs: try row.decode(Date.self, column: "occurred_at").unixMilliseconds,
                actorKind: Self.actorKind(try row.decode(column: "actor_kind")),
                actor: try row.decode(column: "actor"), action: Self.action(try row.decode(column: "action")),
                targetUserId: try row.decode(RaveID?.self, column: "target_user_id")?.hex ?? "",
                reason: try row.decode(column: "reason"), beforeJson: try row.decode(column: "before"),
                afterJson: try row.decode(column: "after"),
                operatorId: try row.decode(RaveID?.self, column: "operator_id")?.hex ?? "",
                method: try row.decode(column: "method"), requestJson: try row.decode(column: "request"),
                finished: try row.decode(column: "finished"), statusCode: try row.decode(column: "status_code"),
                statusMessage: try row.decode(column: "status_message"),
                targetOperatorId: try row.decode(RaveID?.self, column: "target_operator_id")?.hex ?? "")
        }
    }

    /// The actions as the table spells them.
    static let actionNames: [IdentityV1.AuditAction: String] = [
        .banUser: "ban_user", .unbanUser: "unban_user", .createOperator: "create_operator",
        .setOperatorRole: "set_operator_role", .disableOperator: "disable_operator", .adminCall: "admin_call",
        .forceAccountDeletion: "force_account_deletion", .cancelAccountDeletion: "cancel_account_deletion",
    ]

    static func name(_ action: IdentityV1.AuditAction) -> String { actionNames[action] ?? "unspecified" }

    static func action(_ name: String) -> IdentityV1.AuditAction {
        actionNames.first { $0.value == name }?.key ?? .unspecified
    }

    static func actorKind(_ name: String) -> IdentityV1.AuditActorKind {
        switch name {
        case "admin_certificate": .adminCertificate
        case "operator": .operator
        default: .unspecified
        }
    }
}
