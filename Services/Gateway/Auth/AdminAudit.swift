import Foundation
import RaveDynamic
import RaveMessages
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry

/// Records admin writes in identity's audit log (docs/identity.md, "Audit log"): who (the operator, or the admin
/// certificate's name), which method, why (`rave-reason`), and the request as JSON with secrets redacted, before the
/// write is forwarded; the outcome once the service answered.
///
/// Fail closed: when the entry cannot be written the write is refused (UNAVAILABLE, not processed) and the service
/// never sees it. The outcome is best effort: an entry without one is a write whose result is unknown.
struct AdminAudit: Sendable {
    private let identity: IdentityV1.IdentityInternalClient
    private let transcoder: JSONTranscoder
    private let logger: Logger

    /// Keys of request fields whose values never reach the log (case-insensitive substrings of the JSON name).
    static let secretFieldNames = ["password", "secret", "token", "privatekey", "enrolmentcode"]

    init(identity: any RPCCaller, logger: Logger, registry: DescriptorRegistry = .shared) {
        self.identity = IdentityV1.IdentityInternalClient(caller: identity)
        self.transcoder = JSONTranscoder(registry: registry)
        self.logger = logger
    }

    /// Writes the entry; returns its id, or throws UNAVAILABLE (not processed) when identity did not record it.
    func begin(
        method: String, request: [UInt8], context: RequestContext, operatorCaller: OperatorCaller?
    ) async throws(RPCError) -> String {
        let object = Self.requestObject(method: method, request: request, transcoder: transcoder)
        var entry = IdentityV1.BeginAdminCallRequest(
            method: method, reason: context.metadata[MetadataKey.reason] ?? "",
            requestJson: Self.redactedJSON(object), targetUserId: object.flatMap(Self.targetUser) ?? "")
        if let operatorCaller {
            entry.actorKind = .operator
            entry.operatorId = operatorCaller.operatorID
        } else {
            entry.actorKind = .adminCertificate
            let name = context.peer.certificateCommonName ?? ""
            entry.actor = name.isEmpty ? "unnamed admin certificate" : String(name.unicodeScalars.prefix(256))
        }
        do {
            return try await identity.beginAdminCall(entry, options: CallOptions(timeout: .seconds(2))).eventId
        } catch {
            // Identity refusing the entry (a reason it will not take) is the caller's to fix; anything else is ours.
            if error.code == .invalidArgument { throw error }
            throw .unavailable(
                "the audit log could not record this write, so it was not made: \(error.message)", notProcessed: true)
        }
    }

    /// Appends the outcome: OK when `outcome` is nil, else its status.
    func finish(eventID: String, outcome: (any Error)?) async {
        let status = outcome.map { ($0 as? RPCError) ?? RPCError(.unknown, String(describing: $0)) }
        let request = IdentityV1.FinishAdminCallRequest(
            eventId: eventID, statusCode: Int32(status?.code.rawValue ?? 0),
            statusMessage: String((status?.message ?? "").unicodeScalars.prefix(1000)))
        do {
            _ = try await identity.finishAdminCall(request, options: CallOptions(timeout: .seconds(2)))
        } catch {
            logger.warning(
                "the outcome of an audited admin write was not recorded",
                [("event", eventID), ("error", error.message)])
        }
    }

    /// The request as protobuf's JSON mapping, with the values of secret-looking fields replaced by "[redacted]" at
    /// any depth; "{}" when the request does not decode (the service will refuse it, and the method is recorded).
    static func redactedJSON(method: String, request: [UInt8], transcoder: JSONTranscoder) -> String {
        redactedJSON(requestObject(method: method, request: request, transcoder: transcoder))
    }

    /// The request decoded as a JSON object; nil when it does not decode.
    static func requestObject(method: String, request: [UInt8], transcoder: JSONTranscoder) -> [String: Any]? {
        guard let schema = try? transcoder.registry.method(method).request,
            let message = try? DynamicMessage(schema: schema, protobufBytes: request),
            let object = try? JSONSerialization.jsonObject(with: Data(transcoder.json(from: message).utf8))
        else { return nil }
        return object as? [String: Any]
    }

    static func redactedJSON(_ object: [String: Any]?) -> String {
        guard let object,
            let data = try? JSONSerialization.data(withJSONObject: redacted(object), options: [.sortedKeys]),
            let text = String(data: data, encoding: .utf8)
        else { return "{}" }
        return text
    }

    /// The player a write is about, recorded as the entry's target user so a player's audit trail lists it: the
    /// request's `user_id`, else the `user_id` of one of its message fields (a transfer's); nil when it names no
    /// Rave ID (a malformed one is the service's to refuse).
    static func targetUser(of request: [String: Any]) -> String? {
        func userID(_ object: [String: Any]) -> String? {
            guard let text = object["userId"] as? String,
                (try? RequestChecks.raveID(text, field: "user_id")) != nil
            else { return nil }
            return text
        }
        if let user = userID(request) { return user }
        let nested = request.keys.sorted().compactMap { (request[$0] as? [String: Any]).flatMap(userID) }
        return Set(nested).count == 1 ? nested.first : nil
    }

    static func redacted(_ value: Any) -> Any {
        if let object = value as? [String: Any] {
            var copy: [String: Any] = [:]
            for (key, field) in object {
                let lowered = key.lowercased()
                copy[key] = secretFieldNames.contains(where: lowered.contains) ? "[redacted]" : redacted(field)
            }
            return copy
        }
        if let array = value as? [Any] { return array.map(redacted) }
        return value
    }
}
