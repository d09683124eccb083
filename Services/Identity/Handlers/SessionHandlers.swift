import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Refresh, logout, and the caller's sessions and devices.
extension PlayerHandlers {
    func refreshSession(
        _ request: IdentityV1.RefreshSessionRequest, context: RequestContext
    ) async throws -> IdentityV1.RefreshSessionResponse {
        let token = try Validation.text(request.refreshToken, field: "refresh_token", maximum: 256)
        let store = SessionStore(database: dependencies.pool)
        // The common case in one cheap statement; anything else is classified by `refresh` below.
        if let rotated = try await dependencies.rotations.submit(token),
            let accountState = rotated.session.accountState
        {
            let session = rotated.session
            return IdentityV1.RefreshSessionResponse(
                tokens: try dependencies.tokens(
                    userID: session.userID, appID: session.appID, sessionID: session.sessionID,
                    refreshToken: rotated.refreshToken, accountState: accountState))
        }
        let outcome: RefreshOutcome
        var sessionUser: RaveID? = nil
        // One statement decides, rotates or revokes the family, so no transaction is needed around it.
        if let result = try await store.refresh(
            refreshToken: token, lifetime: dependencies.configuration.sessionLifetime)
        {
            let (found, next) = result
            sessionUser = found.userID
            if found.revoked {
                outcome = .revoked
            } else if found.tokenGeneration != found.sessionGeneration {
                // An old token came back: someone holds a copy. The statement ended the family so neither works.
                outcome = .reused
            } else if let next, let accountState = found.accountState {
                outcome = .rotated(
                    try dependencies.tokens(
                        userID: found.userID, appID: found.appID, sessionID: found.sessionID, refreshToken: next,
                        accountState: accountState))
            } else if found.accountState != nil || found.expiresAt < Date() {
                // A live session of a live user is only left as is when it expired.
                outcome = .expired
            } else {
                throw IdentityError.notFound("no user \(found.userID.hex)")
            }
        } else {
            outcome = .unknown
        }
        // A banned player's sessions all ended with the ban: say why rather than "log in again". Only refreshes that
        // rotated nothing ask (a ban ends the session, so a banned player's refresh never rotates).
        if let sessionUser, !outcome.isRotated { try await dependencies.refuseIfBanned(sessionUser) }
        switch outcome {
        case .rotated(let tokens): return IdentityV1.RefreshSessionResponse(tokens: tokens)
        case .unknown: throw IdentityError.unauthenticated("the refresh token is not valid; log in again")
        case .revoked: throw IdentityError.unauthenticated("the session was ended; log in again")
        case .expired: throw IdentityError.unauthenticated("the session expired; log in again")
        case .reused:
            throw IdentityError.unauthenticated(
                "the refresh token was already used; the session is revoked, log in again")
        }
    }

    func logout(_ request: IdentityV1.LogoutRequest, context: RequestContext) async throws -> IdentityV1.LogoutResponse
    {
        let (userID, _) = try await dependencies.player(context)
        let sessionID = try Validation.raveID(try context.requireUser().sessionID, field: "caller session id")
        try await dependencies.pool.transaction { transaction in
            let ended = try await SessionStore(database: transaction).revoke(
                sessionID: sessionID, userID: userID, reason: "logout")
            if let ended {
                try await DeviceLoginStore(database: transaction).stopCrossAppLogin(
                    deviceID: ended.deviceID, appID: ended.appID)
            }
        }
        return IdentityV1.LogoutResponse()
    }

    func listSessions(
        _ request: IdentityV1.ListSessionsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListSessionsResponse {
        let (userID, _) = try await dependencies.player(context)
        let sessions = try await SessionStore(database: dependencies.pool).sessions(
            userID: userID, currentSessionID: try context.requireUser().sessionID)
        return IdentityV1.ListSessionsResponse(sessions: sessions)
    }

    func listDevices(
        _ request: IdentityV1.ListDevicesRequest, context: RequestContext
    ) async throws -> IdentityV1.ListDevicesResponse {
        let (userID, _) = try await dependencies.player(context)
        return IdentityV1.ListDevicesResponse(
            devices: try await SessionStore(database: dependencies.pool).devices(userID: userID))
    }

    func revokeSession(
        _ request: IdentityV1.RevokeSessionRequest, context: RequestContext
    ) async throws -> IdentityV1.RevokeSessionResponse {
        let (userID, _) = try await dependencies.player(context)
        let sessionID = try Validation.raveID(request.sessionId, field: "session_id")
        guard
            try await SessionStore(database: dependencies.pool).revoke(
                sessionID: sessionID, userID: userID, reason: "revoked") != nil
        else { throw IdentityError.notFound("the user has no live session \(sessionID.hex)") }
        return IdentityV1.RevokeSessionResponse()
    }
}

/// What a presented refresh token led to, decided by the refresh statement (which has committed the rotation or
/// the revocation of a reused token's family by the time the error is answered).
private enum RefreshOutcome {
    case rotated(IdentityV1.SessionTokens)
    case unknown
    case revoked
    case expired
    case reused

    var isRotated: Bool {
        if case .rotated = self { return true }
        return false
    }
}
