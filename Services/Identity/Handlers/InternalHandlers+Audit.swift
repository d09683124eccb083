import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// The audit log of admin writes the gateway records for the services that serve them (docs/identity.md, "Audit
/// log"): an entry before the write is forwarded, its outcome after. Only the gateway may call these (`TrustModel`).
extension InternalHandlers {
    func beginAdminCall(
        _ request: IdentityV1.BeginAdminCallRequest, context: RequestContext
    ) async throws -> IdentityV1.BeginAdminCallResponse {
        let method = try Validation.text(request.method, field: "method", maximum: 200)
        let requestJSON = try Validation.text(request.requestJson, field: "request_json", maximum: 65_536)
        guard (try? JSONSerialization.jsonObject(with: Data(requestJSON.utf8))) is [String: Any] else {
            throw IdentityError.invalidArgument("request_json must be a JSON object")
        }
        let actor: AuditActor
        let reason: String
        switch request.actorKind {
        case .operator:
            let id = try Validation.raveID(request.operatorId, field: "operator_id")
            guard let record = try await OperatorStore(database: dependencies.pool).record(id) else {
                throw IdentityError.notFound("no operator \(id.hex)")
            }
            actor = AuditActor(kind: .operator, name: record.email, operatorID: id)
            guard !request.reason.isEmpty else {
                throw IdentityError.invalidArgument("an operator's write needs a reason (rave-reason metadata)")
            }
            reason = try Validation.reason(request.reason)
        case .adminCertificate:
            let name = try Validation.text(request.actor, field: "actor", maximum: 256)
            actor = AuditActor(kind: .adminCertificate, name: name, operatorID: nil)
            reason = request.reason.isEmpty ? "no reason given" : try Validation.reason(request.reason)
        default:
            throw IdentityError.invalidArgument(
                "actor_kind must be AUDIT_ACTOR_KIND_OPERATOR or AUDIT_ACTOR_KIND_ADMIN_CERTIFICATE")
        }
        let target =
            request.targetUserId.isEmpty ? nil : try Validation.raveID(request.targetUserId, field: "target_user_id")
        let id = try await AuditStore(database: dependencies.pool).append(
            AuditEntry(
                actor: actor, action: .adminCall, targetUserID: target, reason: reason, before: "{}", after: "{}",
                method: method, request: requestJSON),
            at: dependencies.clock())
        return IdentityV1.BeginAdminCallResponse(eventId: String(id))
    }

    func finishAdminCall(
        _ request: IdentityV1.FinishAdminCallRequest, context: RequestContext
    ) async throws -> IdentityV1.FinishAdminCallResponse {
        guard let id = Int64(request.eventId), id > 0 else {
            throw IdentityError.invalidArgument("event_id must be an event_id BeginAdminCall returned")
        }
        guard (0...16).contains(request.statusCode) else {
            throw IdentityError.invalidArgument("status_code must be 0…16, got \(request.statusCode)")
        }
        _ = try await AuditStore(database: dependencies.pool).appendOutcome(
            eventID: id, code: request.statusCode, message: String(request.statusMessage.unicodeScalars.prefix(1000)),
            at: dependencies.clock())
        return IdentityV1.FinishAdminCallResponse()
    }
}
