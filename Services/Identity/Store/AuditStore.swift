import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// One entry for the audit log, as a handler writes it.
struct AuditEntry: Sendable {
    /// Who acted: the admin certificate's common name.
    var actor: String
    var action: IdentityV1.AuditAction
    var targetUserID: RaveID?
    var reason: String
    /// The target's state before and after, as JSON objects.
    var before: String
    var after: String
}

/// The audit log of operator actions (`audit_events`): written in the transaction of the change it records, never
/// changed (the database refuses UPDATE, DELETE and TRUNCATE on it, migration 0010).
struct AuditStore: Sendable {
    let database: any PostgresQueryable

    static let insertEvent = PostgresStatement(
        name: "identity_insert_audit_event",
        sql: """
            INSERT INTO audit_events (occurred_at, actor_kind, actor, action, target_user_id, reason, before_state,
                after_state)
            VALUES ($1, 'admin_certificate', $2, $3, $4, $5, $6::jsonb, $7::jsonb)
            """)
    /// Newest first, after the cursor `$5` (an event id) when given; `$1`…`$4` filter when not NULL.
    static let selectEvents = PostgresStatement(
        name: "identity_select_audit_events",
        sql: """
            SELECT id, occurred_at, actor_kind, actor, action, target_user_id, reason, before_state::text AS before,
                after_state::text AS after
            FROM audit_events
            WHERE ($1::uuid IS NULL OR target_user_id = $1) AND ($2::text IS NULL OR action = $2)
                AND ($3::timestamptz IS NULL OR occurred_at >= $3) AND ($4::timestamptz IS NULL OR occurred_at < $4)
                AND ($5::bigint IS NULL OR id < $5)
            ORDER BY id DESC LIMIT $6
            """)

    /// What `ListAuditEvents` filters by; nil fields do not filter.
    struct Filter: Sendable {
        var targetUserID: RaveID?
        var action: IdentityV1.AuditAction?
        var since: Date?
        var before: Date?
    }

    /// Appends an entry at `now`.
    func append(_ entry: AuditEntry, at now: Date) async throws {
        _ = try await database.execute(
            Self.insertEvent,
            [now, entry.actor, Self.name(entry.action), entry.targetUserID, entry.reason, entry.before, entry.after])
    }

    /// Up to `limit` events matching `filter`, newest first, older than the event `after` when given.
    func events(matching filter: Filter, after cursor: Int64?, limit: Int) async throws -> [IdentityV1.AuditEvent] {
        let rows = try await database.execute(
            Self.selectEvents,
            [
                filter.targetUserID, filter.action.map(Self.name), filter.since, filter.before, cursor,
                Int64(limit),
            ])
        return try rows.map { row in
            IdentityV1.AuditEvent(
                eventId: String(try row.decode(Int64.self, column: "id")),
                occurredAtUnixMs: try row.decode(Date.self, column: "occurred_at").unixMilliseconds,
                actorKind: try row.decode(String.self, column: "actor_kind") == "admin_certificate"
                    ? .adminCertificate : .unspecified,
                actor: try row.decode(column: "actor"), action: Self.action(try row.decode(column: "action")),
                targetUserId: try row.decode(RaveID?.self, column: "target_user_id")?.hex ?? "",
                reason: try row.decode(column: "reason"), beforeJson: try row.decode(column: "before"),
                afterJson: try row.decode(column: "after"))
        }
    }

    /// The action as the table spells it.
    static func name(_ action: IdentityV1.AuditAction) -> String {
        switch action {
        case .banUser: "ban_user"
        case .unbanUser: "unban_user"
        case .forceAccountDeletion: "force_account_deletion"
        case .cancelAccountDeletion: "cancel_account_deletion"
        default: "unspecified"
        }
    }

    static func action(_ name: String) -> IdentityV1.AuditAction {
        switch name {
        case "ban_user": .banUser
        case "unban_user": .unbanUser
        case "force_account_deletion": .forceAccountDeletion
        case "cancel_account_deletion": .cancelAccountDeletion
        default: .unspecified
        }
    }
}
