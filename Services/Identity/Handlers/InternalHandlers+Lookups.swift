import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Lookups other services make without a player: they are authorised by the peer's service certificate alone, so
/// a service never has to borrow a player's or an operator's identity to learn public facts.
extension InternalHandlers {
    /// FindUsers takes at most this many references: each email or username costs a query.
    static let maximumReferences = 100

    func getApplications(
        _ request: IdentityV1.GetApplicationsRequest, context: RequestContext
    ) async throws -> IdentityV1.GetApplicationsResponse {
        let ids = try Validation.raveIDs(request.appIds, field: "app_ids")
        let found = try await ApplicationStore(database: dependencies.pool).applications(Array(Set(ids)))
        return IdentityV1.GetApplicationsResponse(applications: ids.compactMap { found[$0]?.message })
    }

    func findUsers(
        _ request: IdentityV1.FindUsersRequest, context: RequestContext
    ) async throws -> IdentityV1.FindUsersResponse {
        guard request.references.count <= Self.maximumReferences else {
            throw IdentityError.invalidArgument(
                "references may hold at most \(Self.maximumReferences) entries, got \(request.references.count)")
        }
        let appID = request.appId.isEmpty ? nil : try Validation.raveID(request.appId, field: "app_id")
        let users = UserStore(database: dependencies.pool)
        // Emails match only players of the app's publisher, as for FindUser.
        var publisher: RaveID?
        if let appID, request.references.contains(where: { if case .email = $0.key { true } else { false } }) {
            publisher = try await self.publisher(of: appID)
        }
        var matches: [(IdentityV1.UserReference, RaveID)] = []
        for (index, reference) in request.references.enumerated() {
            guard let key = reference.key else {
                throw IdentityError.invalidArgument("references[\(index)] must set one of user_id, email or username")
            }
            if let id = try await users.userID(
                matching: key, fieldPrefix: "references[\(index)].", emailPublisher: publisher)
            {
                matches.append((reference, id))
            }
        }
        let records = try await users.users(Array(Set(matches.map(\.1))), appID: appID)
        return IdentityV1.FindUsersResponse(
            users: matches.compactMap { reference, id in
                records[id].map { IdentityV1.FoundUser(reference: reference, user: $0.profile) }
            })
    }
}

extension InternalHandlers {
    /// The publisher of `appID`; for an unknown app, an id no publisher has, so its "players" match no email.
    private func publisher(of appID: RaveID) async throws -> RaveID {
        do {
            return try await dependencies.applications.application(appID).publisherID
        } catch let error as IdentityError where error.code == .notFound {
            return RaveID(high: 0, low: 0)
        }
    }
}

extension UserStore {
    /// The canonical id of the user a reference names, or nil when nobody matches; a malformed reference is
    /// INVALID_ARGUMENT naming its field after `fieldPrefix`.
    ///
    /// An email matches only a verified email, and with `emailPublisher` only a player of that publisher's apps:
    /// an unverified address proves nothing, and a player of one publisher must not learn another's accounts.
    func userID(
        matching key: IdentityV1.UserReference.Key, fieldPrefix: String = "", emailPublisher: RaveID?
    ) async throws -> RaveID? {
        switch key {
        case .userId(let text):
            let id = try Validation.raveID(text, field: "\(fieldPrefix)user_id")
            return try await canonicalIDs([id])[id]
        case .email(let email):
            return try await userID(verifiedEmail: try Validation.email(email), publisher: emailPublisher)
        case .username(let name):
            return try await userID(username: try Validation.text(name, field: "\(fieldPrefix)username", maximum: 32))
        }
    }
}
