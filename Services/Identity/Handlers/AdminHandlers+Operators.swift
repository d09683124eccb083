import Foundation
import RaveAuth
import RaveGatewayRules
import RaveJSON
import RaveMessages
import RavePostgres
import RaveRPC

/// Operator accounts, managed by owners (or the admin certificate) within their publisher scope; every change is
/// recorded in the audit log in its own transaction (docs/identity.md, "Operators").
extension AdminHandlers {
    func createOperator(
        _ request: IdentityV1.CreateOperatorRequest, context: RequestContext
    ) async throws -> IdentityV1.CreateOperatorResponse {
        let actor = try await dependencies.admin(context)
        let email = try Validation.email(request.email)
        let grant = try Operators.grant(
            role: request.role, publisherID: request.publisherId, allPublishers: request.allPublishers)
        try actor.requireMayGrant(grant)
        let reason = try Validation.reason(request.reason)
        let code = try OpaqueToken.generate()
        let now = dependencies.clock()
        let expiresAt = now.addingTimeInterval(Operators.enrolmentLifetime)
        let record = try await dependencies.pool.transaction { transaction in
            let record = try await OperatorStore(database: transaction).create(
                email: email, grant: grant, enrolmentCode: code, expiresAt: expiresAt)
            try await AuditStore(database: transaction).append(
                AuditEntry(
                    actor: actor.audit, action: .createOperator, targetUserID: nil, reason: reason, before: "{}",
                    after: Self.state(record), targetOperatorID: record.id),
                at: now)
            return record
        }
        return IdentityV1.CreateOperatorResponse(
            account: record.message, enrolmentCode: code, enrolmentExpiresAtUnixMs: expiresAt.unixMilliseconds)
    }

    func listOperators(
        _ request: IdentityV1.ListOperatorsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListOperatorsResponse {
        let actor = try await dependencies.admin(context)
        let publisher = actor.grant?.publisherID.flatMap { RaveID($0) }
        let records = try await OperatorStore(database: dependencies.pool).all(publisher: publisher)
        return IdentityV1.ListOperatorsResponse(operators: records.map { $0.message })
    }

    func setOperatorRole(
        _ request: IdentityV1.SetOperatorRoleRequest, context: RequestContext
    ) async throws -> IdentityV1.SetOperatorRoleResponse {
        let actor = try await dependencies.admin(context)
        let id = try Validation.raveID(request.operatorId, field: "operator_id")
        let grant = try Operators.grant(
            role: request.role, publisherID: request.publisherId, allPublishers: request.allPublishers)
        try actor.requireMayGrant(grant)
        let reason = try Validation.reason(request.reason)
        let now = dependencies.clock()
        return try await dependencies.pool.transaction { transaction in
            let store = OperatorStore(database: transaction)
            let before = try await Self.operatorInScope(id, of: actor, store: store)
            let after = try await store.setGrant(id, grant)
            // The role and scope live in the tokens: the operator logs in again to act with the new ones.
            let ended = try await store.revokeAll(operatorID: id, reason: "role")
            try await AuditStore(database: transaction).append(
                AuditEntry(
                    actor: actor.audit, action: .setOperatorRole, targetUserID: nil, reason: reason,
                    before: Self.state(before), after: Self.state(after), targetOperatorID: id),
                at: now)
            return IdentityV1.SetOperatorRoleResponse(account: after.message, revokedSessions: UInt32(clamping: ended))
        }
    }

    func disableOperator(
        _ request: IdentityV1.DisableOperatorRequest, context: RequestContext
    ) async throws -> IdentityV1.DisableOperatorResponse {
        let actor = try await dependencies.admin(context)
        let id = try Validation.raveID(request.operatorId, field: "operator_id")
        let reason = try Validation.reason(request.reason)
        let now = dependencies.clock()
        return try await dependencies.pool.transaction { transaction in
            let store = OperatorStore(database: transaction)
            let before = try await Self.operatorInScope(id, of: actor, store: store)
            let after = try await store.disable(id)
            let ended = try await store.revokeAll(operatorID: id, reason: "disabled")
            try await AuditStore(database: transaction).append(
                AuditEntry(
                    actor: actor.audit, action: .disableOperator, targetUserID: nil, reason: reason,
                    before: Self.state(before), after: Self.state(after), targetOperatorID: id),
                at: now)
            return IdentityV1.DisableOperatorResponse(account: after.message, revokedSessions: UInt32(clamping: ended))
        }
    }

    /// The operator `id`, locked, when `actor` may manage it (its publisher, or every publisher for an unscoped
    /// owner); NOT_FOUND for an operator outside the actor's scope, as for none.
    static func operatorInScope(_ id: RaveID, of actor: AdminActor, store: OperatorStore) async throws -> OperatorRecord
    {
        guard let record = try await store.record(id),
            actor.grant?.publisherID == nil || actor.grant?.publisherID == record.grant.publisherID
        else { throw IdentityError.notFound("no operator \(id.hex)") }
        return record
    }

    /// An operator's state for the audit log, as JSON.
    static func state(_ record: OperatorRecord) -> String {
        "{\"email\": \(JSONString.quoted(record.email)), \"role\": \(JSONString.quoted(record.grant.role.description)), "
            + "\"publisher_id\": \(JSONString.quoted(record.grant.publisherScope)), \"disabled\": \(record.disabled)}"
    }
}
