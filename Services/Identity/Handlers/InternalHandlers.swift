import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Serves `rave.identity.v1.IdentityInternal` to peers with a service certificate.
struct InternalHandlers: IdentityV1.IdentityInternalHandler {
    let dependencies: IdentityDependencies

    func resolveUsers(
        _ request: IdentityV1.ResolveUsersRequest, context: RequestContext
    ) async throws -> IdentityV1.ResolveUsersResponse {
        let ids = try Validation.raveIDs(request.userIds, field: "user_ids")
        let canonical = try await UserStore(database: dependencies.pool).canonicalIDs(ids)
        return IdentityV1.ResolveUsersResponse(
            users: zip(request.userIds, ids).map { text, id in
                IdentityV1.ResolvedUser(requestedId: text, canonicalId: canonical[id]?.hex ?? "")
            })
    }

    func getUsers(
        _ request: IdentityV1.GetUsersRequest, context: RequestContext
    ) async throws -> IdentityV1.GetUsersResponse {
        let ids = try Validation.raveIDs(request.userIds, field: "user_ids")
        let appID = request.appId.isEmpty ? nil : try Validation.raveID(request.appId, field: "app_id")
        let users = UserStore(database: dependencies.pool)
        let canonical = try await users.canonicalIDs(ids)
        let records = try await users.users(Array(Set(canonical.values)), appID: appID)
        return IdentityV1.GetUsersResponse(users: ids.compactMap { canonical[$0].flatMap { records[$0]?.profile } })
    }

    func lookupExternal(
        _ request: IdentityV1.LookupExternalRequest, context: RequestContext
    ) async throws -> IdentityV1.LookupExternalResponse {
        guard request.subjects.count + request.emails.count <= 1000 else {
            throw IdentityError.invalidArgument("at most 1000 subjects and emails per call")
        }
        var matches: [IdentityV1.ExternalMatch] = []
        let links = ProviderStore(database: dependencies.pool)
        for (index, subject) in request.subjects.enumerated() {
            guard let provider = ProviderName.name(subject.provider) else {
                throw IdentityError.invalidArgument("subjects[\(index)].provider must be google, apple or facebook")
            }
            if let user = try await links.linkedUser(provider: provider, subject: subject.subject) {
                matches.append(IdentityV1.ExternalMatch(key: .subject(subject), userId: user.hex))
            }
        }
        let users = UserStore(database: dependencies.pool)
        for email in request.emails where !email.isEmpty {
            if let id = try await users.userID(verifiedEmail: email, publisher: nil) {
                matches.append(IdentityV1.ExternalMatch(key: .email(email), userId: id.hex))
            }
        }
        return IdentityV1.LookupExternalResponse(matches: matches)
    }

    func usedApplications(
        _ request: IdentityV1.UsedApplicationsRequest, context: RequestContext
    ) async throws -> IdentityV1.UsedApplicationsResponse {
        let appID = try Validation.raveID(request.appId, field: "app_id")
        let ids = try Validation.raveIDs(request.userIds, field: "user_ids")
        let canonical = try await UserStore(database: dependencies.pool).canonicalIDs(ids)
        let played = try await DeviceLoginStore(database: dependencies.pool).usersWhoPlayed(
            appID: appID, among: Array(Set(canonical.values)))
        return IdentityV1.UsedApplicationsResponse(
            userIds: zip(request.userIds, ids).compactMap { text, id in
                canonical[id].map(played.contains) == true ? text : nil
            })
    }

    func signingKeys(
        _ request: IdentityV1.SigningKeysRequest, context: RequestContext
    ) async throws -> IdentityV1.SigningKeysResponse {
        return IdentityV1.SigningKeysResponse(
            keys: try await SigningKeyStore(database: dependencies.pool).publishedKeys())
    }

    func listAllowedOrigins(
        _ request: IdentityV1.ListAllowedOriginsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListAllowedOriginsResponse {
        IdentityV1.ListAllowedOriginsResponse(
            origins: try await ApplicationStore(database: dependencies.pool).allowedOrigins())
    }

    /// ListRevocations answers at most this many per call (and 1000 when the request leaves it 0).
    static let maximumRevocations = 10_000

    func listRevocations(
        _ request: IdentityV1.ListRevocationsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListRevocationsResponse {
        let limit = request.limit == 0 ? 1000 : Int(request.limit)
        guard limit <= Self.maximumRevocations else {
            throw IdentityError.invalidArgument("limit must be 1…\(Self.maximumRevocations), got \(request.limit)")
        }
        let horizon = dependencies.revocationHorizon
        let (page, more) = try await SessionStore(database: dependencies.pool).revocationPage(
            after: request.afterCursor, horizon: horizon, limit: limit)
        return IdentityV1.ListRevocationsResponse(
            revocations: page.map { revocation in
                IdentityV1.Revocation(
                    sessionId: revocation.sessionID?.hex ?? "",
                    expiresAtUnixMs: revocation.revokedAt.addingTimeInterval(TimeInterval(horizon)).unixMilliseconds,
                    mergedUserId: revocation.mergedUserID?.hex ?? "")
            },
            cursor: page.last?.cursor ?? request.afterCursor, more: more)
    }
}
