import RaveMessages
import RavePostgres
import RaveRPC

/// Finding players, ending their sessions and resetting their two-factor, for operators (docs/identity.md, "Player
/// support").
extension AdminHandlers {
    func searchUsers(
        _ request: IdentityV1.SearchUsersRequest, context: RequestContext
    ) async throws -> IdentityV1.SearchUsersResponse {
        _ = try await dependencies.admin(context)
        let query = try Validation.text(request.query, field: "query", maximum: 254)
        let users = UserStore(database: dependencies.pool)
        var ids: [RaveID]
        if let id = RaveID(wire: query) {
            // A Rave ID finds its account (a merged-away one the account it was merged into); a username or an
            // email never has the Rave ID form, so nothing else is looked up.
            ids = try await users.canonicalIDs([id])[id].map { [$0] } ?? []
        } else {
            ids = try await UserSearchStore(database: dependencies.pool).users(matching: query)
        }
        let now = dependencies.clock()
        var matches: [IdentityV1.UserMatch] = []
        for id in ids {
            guard let found = try await users.userWithBan(id, appID: nil) else { continue }
            let ban = found.ban.flatMap { $0.applies(at: now) ? $0.info : nil }
            matches.append(IdentityV1.UserMatch(user: found.user.message, ban: ban))
        }
        return IdentityV1.SearchUsersResponse(users: matches)
    }

    func listUserSessions(
        _ request: IdentityV1.ListUserSessionsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListUserSessionsResponse {
        _ = try await dependencies.admin(context)
        let account = try await canonicalUser(request.userId)
        let sessions = try await SessionStore(database: dependencies.pool).sessions(
            userID: account, currentSessionID: "")
        return IdentityV1.ListUserSessionsResponse(sessions: sessions)
    }

    func revokeUserSessions(
        _ request: IdentityV1.RevokeUserSessionsRequest, context: RequestContext
    ) async throws -> IdentityV1.RevokeUserSessionsResponse {
        _ = try await dependencies.admin(context)
        let account = try await canonicalUser(request.userId)
        let sessions = SessionStore(database: dependencies.pool)
        let ended: Int
        if request.sessionId.isEmpty {
            ended = try await sessions.revokeOthers(userID: account, keeping: nil, reason: "revoked")
        } else {
            let sessionID = try Validation.raveID(request.sessionId, field: "session_id")
            ended = try await sessions.revoke(sessionID: sessionID, userID: account, reason: "revoked") == nil ? 0 : 1
        }
        return IdentityV1.RevokeUserSessionsResponse(revokedSessions: UInt32(clamping: ended))
    }

    func resetTwoFactor(
        _ request: IdentityV1.ResetTwoFactorRequest, context: RequestContext
    ) async throws -> IdentityV1.ResetTwoFactorResponse {
        _ = try await dependencies.admin(context)
        let account = try await canonicalUser(request.userId)
        return try await dependencies.pool.transaction { transaction in
            let store = TwoFactorStore(database: transaction, secrets: dependencies.secretKeys)
            let state = try await store.state(userID: account)
            if state != nil { try await store.disable(userID: account) }
            // Whoever holds a session may be who took the authenticator: every session ends, as on a password reset.
            let ended = try await SessionStore(database: transaction).revokeOthers(
                userID: account, keeping: nil, reason: "two_factor")
            return IdentityV1.ResetTwoFactorResponse(
                wasEnabled: state?.confirmed ?? false, revokedSessions: UInt32(clamping: ended))
        }
    }

    /// The account `text` names (a merged-away id: the account it was merged into), or NOT_FOUND.
    private func canonicalUser(_ text: String) async throws -> RaveID {
        let requested = try Validation.raveID(text, field: "user_id")
        guard let account = try await UserStore(database: dependencies.pool).canonicalIDs([requested])[requested]
        else { throw IdentityError.notFound("no user \(requested.hex)") }
        return account
    }
}
