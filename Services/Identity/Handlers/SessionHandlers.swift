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
        let outcome: RefreshOutcome = try await service.pool.transaction { transaction in
            let sessions = SessionStore(database: transaction)
            guard let found = try await sessions.lookup(refreshToken: token) else { return .unknown }
            if found.revoked { return .revoked }
            if found.tokenGeneration != found.sessionGeneration {
                // An old token came back: someone holds a copy. End the family so neither copy works.
                try await sessions.revoke(sessionID: found.sessionID, userID: found.userID, reason: "reuse")
                return .reused
            }
            if found.expiresAt < Date() { return .expired }
            let next = try await sessions.rotate(
                sessionID: found.sessionID, lifetime: service.configuration.sessionLifetime)
            return .rotated(
                try await service.tokens(
                    userID: found.userID, appID: found.appID, sessionID: found.sessionID, refreshToken: next,
                    in: transaction))
        }
        switch outcome {
        case .rotated(let tokens): return IdentityV1.RefreshSessionResponse(tokens: tokens)
        case .unknown: throw RPCError.unauthenticated("the refresh token is not valid; log in again")
        case .revoked: throw RPCError.unauthenticated("the session was ended; log in again")
        case .expired: throw RPCError.unauthenticated("the session expired; log in again")
        case .reused:
            throw RPCError.unauthenticated("the refresh token was already used; the session is revoked, log in again")
        }
    }

    func logout(_ request: IdentityV1.LogoutRequest, context: RequestContext) async throws -> IdentityV1.LogoutResponse
    {
        let (userID, _) = try await service.player(context)
        let sessionID = try Validation.raveID(try context.requireUser().sessionID, field: "caller session id")
        try await service.pool.transaction { transaction in
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
        let (userID, _) = try await service.player(context)
        let sessions = try await SessionStore(database: service.pool).sessions(
            userID: userID, currentSessionID: try context.requireUser().sessionID)
        return IdentityV1.ListSessionsResponse(sessions: sessions)
    }

    func listDevices(
        _ request: IdentityV1.ListDevicesRequest, context: RequestContext
    ) async throws -> IdentityV1.ListDevicesResponse {
        let (userID, _) = try await service.player(context)
        return IdentityV1.ListDevicesResponse(
            devices: try await SessionStore(database: service.pool).devices(userID: userID))
    }

    func revokeSession(
        _ request: IdentityV1.RevokeSessionRequest, context: RequestContext
    ) async throws -> IdentityV1.RevokeSessionResponse {
        let (userID, _) = try await service.player(context)
        let sessionID = try Validation.raveID(request.sessionId, field: "session_id")
        guard
            try await SessionStore(database: service.pool).revoke(
                sessionID: sessionID, userID: userID, reason: "revoked") != nil
        else { throw RPCError.notFound("the user has no live session \(sessionID.hex)") }
        return IdentityV1.RevokeSessionResponse()
    }
}

/// What a presented refresh token led to, decided inside the transaction and answered after it commits (so the
/// revocation of a reused token's family is not rolled back by the error).
private enum RefreshOutcome {
    case rotated(IdentityV1.SessionTokens)
    case unknown
    case revoked
    case expired
    case reused
}
