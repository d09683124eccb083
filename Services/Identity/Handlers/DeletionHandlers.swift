import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// A player deleting their own account (docs/identity.md, "Deleting an account").
extension PlayerHandlers {
    /// Re-authenticates the caller and schedules the account's deletion after the grace period.
    ///
    /// An account with a password gives it (checked like ChangePassword's current password, through the hashing
    /// slots and the login throttle); one without (a guest, or provider logins only) must call from a session that
    /// logged in within the last 5 minutes. With two-factor, a code is needed as well, spent in the transaction that
    /// schedules the deletion.
    func deleteAccount(
        _ request: IdentityV1.DeleteAccountRequest, context: RequestContext
    ) async throws -> IdentityV1.DeleteAccountResponse {
        let (userID, _) = try await dependencies.player(context)
        let deletions = dependencies.deletions
        let scheduled = try await reauthenticated(
            userID: userID, currentPassword: request.currentPassword, twoFactorCode: request.twoFactorCode,
            purpose: "delete this account", context: context
        ) { transaction in
            try await deletions.request(userID, by: .player, in: transaction)
        }
        return IdentityV1.DeleteAccountResponse(
            deletion: scheduled.deletion.message, revokedSessions: UInt32(clamping: scheduled.endedSessions))
    }

    /// The caller's latest deletion: scheduled, or cancelled (by the login that let the caller in, or an operator).
    func getAccountDeletion(
        _ request: IdentityV1.GetAccountDeletionRequest, context: RequestContext
    ) async throws -> IdentityV1.GetAccountDeletionResponse {
        let (userID, _) = try await dependencies.player(context)
        let latest = try await AccountDeletionStore(database: dependencies.pool).latest(userID: userID)
        return IdentityV1.GetAccountDeletionResponse(deletion: latest?.message)
    }
}

/// Operators listing, forcing and cancelling deletions; forcing and cancelling are audited.
extension AdminHandlers {
    func listAccountDeletions(
        _ request: IdentityV1.ListAccountDeletionsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListAccountDeletionsResponse {
        _ = try await dependencies.admin(context)
        let limit = try RequestLimits.deletionPageSize.check(
            request.pageSize, orThrow: IdentityError.invalidArgument)
        var status: IdentityV1.AccountDeletionStatus? = nil
        switch request.status {
        case .unspecified: break
        case .scheduled, .cancelled, .started, .completed: status = request.status
        case .unrecognized(let value):
            throw IdentityError.invalidArgument(
                "status must be ACCOUNT_DELETION_STATUS_SCHEDULED, _CANCELLED, _STARTED, _COMPLETED or "
                    + "unspecified, got \(value)")
        }
        let userID = request.userId.isEmpty ? nil : try Validation.raveID(request.userId, field: "user_id")
        var cursor: Int64? = nil
        if !request.pageToken.isEmpty {
            guard let seq = Int64(request.pageToken), seq > 0 else {
                throw IdentityError.invalidArgument(
                    "page_token must be a next_page_token ListAccountDeletions returned")
            }
            cursor = seq
        }
        let found = try await AccountDeletionStore(database: dependencies.pool).page(
            status: status, userID: userID, before: cursor, limit: limit + 1)
        let page = found.prefix(limit)
        return IdentityV1.ListAccountDeletionsResponse(
            deletions: page.map(\.deletion), nextPageToken: found.count > limit ? String(page.last?.seq ?? 0) : "")
    }

    func forceAccountDeletion(
        _ request: IdentityV1.ForceAccountDeletionRequest, context: RequestContext
    ) async throws -> IdentityV1.ForceAccountDeletionResponse {
        let actor = try await dependencies.admin(context).audit
        let requested = try Validation.raveID(request.userId, field: "user_id")
        let reason = try Validation.reason(request.reason)
        let store = AccountDeletionStore(database: dependencies.pool)
        // A deletion that started already (the id no longer resolves): answered as it is, nothing recorded.
        if try await UserStore(database: dependencies.pool).canonicalIDs([requested])[requested] == nil,
            let earlier = try await store.latest(userID: requested),
            earlier.status == .started || earlier.status == .completed
        {
            return IdentityV1.ForceAccountDeletionResponse(deletion: earlier.message)
        }
        let now = dependencies.clock()
        let deletion = try await dependencies.pool.transaction { transaction in
            let account = try await UserStore(database: transaction).canonicalIDs([requested])[requested]
            let before = try await AccountDeletionStore(database: transaction).latest(userID: account ?? requested)
            let deletion = try await dependencies.deletions.request(requested, by: .operator, in: transaction).deletion
            try await AuditStore(database: transaction).append(
                AuditEntry(
                    actor: actor, action: .forceAccountDeletion, targetUserID: deletion.userID,
                    reason: reason, before: AccountDeletions.state(before, requested: requested),
                    after: AccountDeletions.state(deletion, requested: requested)),
                at: now)
            return deletion
        }
        return IdentityV1.ForceAccountDeletionResponse(deletion: deletion.message)
    }

    func cancelAccountDeletion(
        _ request: IdentityV1.CancelAccountDeletionRequest, context: RequestContext
    ) async throws -> IdentityV1.CancelAccountDeletionResponse {
        let actor = try await dependencies.admin(context).audit
        let requested = try Validation.raveID(request.userId, field: "user_id")
        let reason = try Validation.reason(request.reason)
        let now = dependencies.clock()
        let deletion = try await dependencies.pool.transaction { transaction in
            let store = AccountDeletionStore(database: transaction)
            guard let account = try await UserStore(database: transaction).canonicalIDs([requested])[requested] else {
                if let earlier = try await store.latest(userID: requested), earlier.status != .cancelled {
                    throw IdentityError.failedPrecondition(
                        "the deletion of user \(requested.hex) has started; it cannot be cancelled")
                }
                throw IdentityError.notFound("no user \(requested.hex)")
            }
            guard let live = try await store.live(userID: account) else {
                throw IdentityError.notFound("user \(account.hex) has no scheduled deletion")
            }
            guard live.status == .scheduled, try await store.cancel(userID: account, at: now, by: "operator"),
                let cancelled = try await store.deletion(live.id)
            else {
                throw IdentityError.failedPrecondition(
                    "the deletion of user \(account.hex) has started; it cannot be cancelled")
            }
            try await AuditStore(database: transaction).append(
                AuditEntry(
                    actor: actor, action: .cancelAccountDeletion, targetUserID: account, reason: reason,
                    before: AccountDeletions.state(live, requested: requested),
                    after: AccountDeletions.state(cancelled, requested: requested)),
                at: now)
            return cancelled
        }
        return IdentityV1.CancelAccountDeletionResponse(deletion: deletion.message)
    }
}
