import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Users as operators see them, bans, and the audit log of what operators did (docs/identity.md, "Bans" and "Audit
/// log").
extension AdminHandlers {
    func getUser(
        _ request: IdentityV1.GetUserRequest, context: RequestContext
    ) async throws -> IdentityV1.GetUserResponse {
        _ = try await dependencies.admin(context)
        let requested = try Validation.raveID(request.userId, field: "user_id")
        let users = UserStore(database: dependencies.pool)
        guard let canonical = try await users.canonicalIDs([requested])[requested],
            let found = try await users.userWithBan(canonical, appID: nil)
        else { throw IdentityError.notFound("no user \(requested.hex)") }
        let ban = found.ban.flatMap { $0.applies(at: dependencies.clock()) ? $0.info : nil }
        return IdentityV1.GetUserResponse(user: found.user.message, ban: ban)
    }

    func banUser(
        _ request: IdentityV1.BanUserRequest, context: RequestContext
    ) async throws -> IdentityV1.BanUserResponse {
        let actor = try await dependencies.admin(context).audit
        let requested = try Validation.raveID(request.userId, field: "user_id")
        let reason = try Validation.reason(request.reason)
        let auditReason = try Validation.auditReason(shown: reason, context: context)
        let now = dependencies.clock()
        let ban = BanRecord(reason: reason, until: try Bans.end(request.untilUnixMs, now: now))
        let (account, ended) = try await dependencies.pool.transaction { transaction in
            let account = try await Bans.lockAccount(requested, in: transaction)
            let bans = BanStore(database: transaction)
            let before = try await bans.ban(of: account)
            try await bans.ban(account, ban, at: now)
            let ended = try await SessionStore(database: transaction).revokeOthers(
                userID: account, keeping: nil, reason: "ban")
            try await AuditStore(database: transaction).append(
                AuditEntry(
                    actor: actor, action: .banUser, targetUserID: account, reason: auditReason,
                    before: Bans.state(before, at: now),
                    after: Bans.state(ban, at: now, requested: requested == account ? nil : requested)),
                at: now)
            return (account, ended)
        }
        // Once more after the commit: a login whose session committed while the ban was written, unseen by it
        // (its own check after the commit ends it too; see `Bans`).
        let late = try await SessionStore(database: dependencies.pool).revokeOthers(
            userID: account, keeping: nil, reason: "ban")
        return IdentityV1.BanUserResponse(
            userId: account.hex, ban: ban.info, revokedSessions: UInt32(clamping: ended + late))
    }

    func unbanUser(
        _ request: IdentityV1.UnbanUserRequest, context: RequestContext
    ) async throws -> IdentityV1.UnbanUserResponse {
        let actor = try await dependencies.admin(context).audit
        let requested = try Validation.raveID(request.userId, field: "user_id")
        let reason = try Validation.auditReason(
            shown: try Validation.reason(request.reason), context: context)
        let now = dependencies.clock()
        return try await dependencies.pool.transaction { transaction in
            let account = try await Bans.lockAccount(requested, in: transaction)
            let bans = BanStore(database: transaction)
            let before = try await bans.ban(of: account)
            try await bans.lift(account)
            try await AuditStore(database: transaction).append(
                AuditEntry(
                    actor: actor, action: .unbanUser, targetUserID: account, reason: reason,
                    before: Bans.state(before, at: now),
                    after: Bans.state(nil, at: now, requested: requested == account ? nil : requested)),
                at: now)
            return IdentityV1.UnbanUserResponse(
                userId: account.hex, wasBanned: before?.applies(at: now) ?? false)
        }
    }

    func listAuditEvents(
        _ request: IdentityV1.ListAuditEventsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListAuditEventsResponse {
        _ = try await dependencies.admin(context)
        let limit = try RequestLimits.auditPageSize.check(request.pageSize, orThrow: IdentityError.invalidArgument)
        var filter = AuditStore.Filter()
        if !request.targetUserId.isEmpty {
            filter.targetUserID = try Validation.raveID(request.targetUserId, field: "target_user_id")
        }
        switch request.action {
        case .unspecified: break
        case .unrecognized(let value):
            throw IdentityError.invalidArgument(
                "action must be AUDIT_ACTION_BAN_USER, AUDIT_ACTION_UNBAN_USER, AUDIT_ACTION_CREATE_OPERATOR, "
                    + "AUDIT_ACTION_SET_OPERATOR_ROLE, AUDIT_ACTION_DISABLE_OPERATOR, AUDIT_ACTION_ADMIN_CALL, "
                    + "AUDIT_ACTION_FORCE_ACCOUNT_DELETION, AUDIT_ACTION_CANCEL_ACCOUNT_DELETION or unspecified, "
                    + "got \(value)")
        default: filter.action = request.action
        }
        switch request.actorKind {
        case .unspecified: break
        case .unrecognized(let value):
            throw IdentityError.invalidArgument(
                "actor_kind must be AUDIT_ACTOR_KIND_ADMIN_CERTIFICATE, AUDIT_ACTOR_KIND_OPERATOR or unspecified, "
                    + "got \(value)")
        default: filter.actorKind = request.actorKind
        }
        if !request.operatorId.isEmpty {
            filter.operatorID = try Validation.raveID(request.operatorId, field: "operator_id")
        }
        if !request.method.isEmpty {
            filter.method = try Validation.text(request.method, field: "method", maximum: 200)
        }
        for (field, value) in [("since_unix_ms", request.sinceUnixMs), ("before_unix_ms", request.beforeUnixMs)]
        where value < 0 {
            throw IdentityError.invalidArgument("\(field) must be 0 (no bound) or a time in Unix ms, got \(value)")
        }
        if request.sinceUnixMs > 0 { filter.since = Date(unixMilliseconds: request.sinceUnixMs) }
        if request.beforeUnixMs > 0 { filter.before = Date(unixMilliseconds: request.beforeUnixMs) }
        if request.sinceUnixMs > 0, request.beforeUnixMs > 0, request.sinceUnixMs >= request.beforeUnixMs {
            throw IdentityError.invalidArgument(
                "since_unix_ms (\(request.sinceUnixMs)) must be before before_unix_ms (\(request.beforeUnixMs))")
        }
        var cursor: Int64? = nil
        if !request.pageToken.isEmpty {
            guard let id = Int64(request.pageToken), id > 0 else {
                throw IdentityError.invalidArgument("page_token must be a next_page_token ListAuditEvents returned")
            }
            cursor = id
        }
        let events = try await AuditStore(database: dependencies.pool).events(
            matching: filter, after: cursor, limit: limit + 1)
        let page = Array(events.prefix(limit))
        return IdentityV1.ListAuditEventsResponse(
            events: page, nextPageToken: events.count > limit ? page.last?.eventId ?? "" : "")
    }
}
