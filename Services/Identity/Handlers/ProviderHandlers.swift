import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Provider login, connect and disconnect (Google, Apple, Facebook Limited Login ID tokens).
extension PlayerHandlers {
    func loginWithProvider(
        _ request: IdentityV1.LoginWithProviderRequest, context: RequestContext
    ) async throws -> IdentityV1.LoginResponse {
        let appID = try Validation.raveID(request.appId, field: "app_id")
        let device = try Validation.device(request.device)
        let (provider, identity) = try verifyProviderToken(request.provider, request.idToken, nonce: request.nonce)
        _ = try await dependencies.applications.application(appID)
        // The signed-in player of this app, if any: a guest becomes the account (or is merged into it).
        let callerID = context.caller.flatMap { $0.appID == appID.hex ? RaveID($0.userID) : nil }
        let response = try await dependencies.pool.transaction { transaction in
            let links = ProviderStore(database: transaction)
            let users = UserStore(database: transaction)
            var guest: RaveID? = nil
            if let callerID, let canonical = try await users.canonicalIDs([callerID])[callerID],
                try await users.user(canonical, appID: nil).accountState != .authenticated
            {
                guest = canonical
            }
            if let owner = try await links.owner(provider: provider, subject: identity.subject) {
                // The seed: an anonymous or personalized player logging in to an existing account is merged into it.
                let source = guest == owner ? nil : guest
                return try await loginOrChallenge(
                    userID: owner, appID: appID, device: device, mergeSource: source, in: transaction)
            }
            let accountID: RaveID
            if let guest { accountID = guest } else { accountID = try await users.createUser() }
            try await links.link(
                provider: provider, subject: identity.subject, userID: accountID, email: identity.email)
            try await ProviderLinkEvents.publish(
                userID: accountID, appID: appID, provider: provider, subject: identity.subject, in: transaction)
            // The first login with a provider brings the player's name and picture, unless they chose their own.
            try await ProfileStore(database: transaction).fillFromProvider(
                userID: accountID, name: identity.name, picture: identity.picture, verifiedEmail: identity.email)
            return try await finishLogin(
                userID: accountID, appID: appID, device: device, created: guest == nil, explicit: true,
                in: transaction)
        }
        return try await dependencies.checkedAfterCommit(response)
    }

    func connectProvider(
        _ request: IdentityV1.ConnectProviderRequest, context: RequestContext
    ) async throws -> IdentityV1.ConnectProviderResponse {
        let (userID, appID) = try await dependencies.player(context)
        let sessionID = context.caller.flatMap { RaveID($0.sessionID) }
        let (provider, identity) = try verifyProviderToken(request.provider, request.idToken, nonce: request.nonce)
        let settings = try await dependencies.applications.application(appID).settings
        let mergeAllowed = settings.mergePolicy == .prompt || settings.mergePolicy == .automatic
        return try await dependencies.pool.transaction { transaction in
            let links = ProviderStore(database: transaction)
            let users = UserStore(database: transaction)
            /// The caller as it is now, with an access token that says so.
            func connected() async throws -> IdentityV1.ConnectProviderResponse {
                .init(
                    outcome: .connected(try await users.user(userID, appID: appID).message),
                    session: try await freshSession(userID: userID, appID: appID, sessionID: sessionID, in: transaction)
                )
            }
            /// The caller merged into `owner`: its session now acts as `owner`.
            func merged(into owner: RaveID) async throws -> IdentityV1.ConnectProviderResponse {
                .init(
                    outcome: .merged(try await mergeIntoOwner(userID, owner: owner, appID: appID, in: transaction)),
                    session: try await freshSession(userID: owner, appID: appID, sessionID: sessionID, in: transaction))
            }
            guard let owner = try await links.owner(provider: provider, subject: identity.subject) else {
                try await links.link(
                    provider: provider, subject: identity.subject, userID: userID, email: identity.email)
                try await ProviderLinkEvents.publish(
                    userID: userID, appID: appID, provider: provider, subject: identity.subject, in: transaction)
                return try await connected()
            }
            if owner == userID { return try await connected() }
            switch request.resolution {
            case .forceDisconnect:
                guard settings.allowForceDisconnect else {
                    throw IdentityError.failedPrecondition(
                        "this \(provider) account belongs to another player and this app does not allow "
                            + "force-disconnect")
                }
                // The same rule as DisconnectProvider: no account loses its last way to log in.
                guard Self.keepsALogin(try await links.credentials(userID: owner), without: provider) else {
                    throw IdentityError.failedPrecondition(
                        "this \(provider) account is the other player's last way to log in, so it cannot be moved; "
                            + "merge instead, or the other player adds a password or another provider first")
                }
                try await links.move(provider: provider, subject: identity.subject, to: userID)
                try await ProviderLinkEvents.publish(
                    userID: userID, appID: appID, provider: provider, subject: identity.subject, in: transaction)
                return try await connected()
            case .merge where !mergeAllowed:
                throw IdentityError.failedPrecondition(
                    "this \(provider) account belongs to another player and this app's merge policy is none")
            case .merge:
                return try await merged(into: owner)
            case .unspecified where settings.mergePolicy == .automatic:
                return try await merged(into: owner)
            default:
                let other = try await users.user(owner, appID: appID).profile
                let ownerKeepsALogin = Self.keepsALogin(try await links.credentials(userID: owner), without: provider)
                return .init(
                    outcome: .conflict(
                        IdentityV1.ProviderConflict(
                            otherUser: other, forceDisconnectAllowed: settings.allowForceDisconnect && ownerKeepsALogin,
                            mergeAllowed: mergeAllowed)))
            }
        }
    }

    func disconnectProvider(
        _ request: IdentityV1.DisconnectProviderRequest, context: RequestContext
    ) async throws -> IdentityV1.DisconnectProviderResponse {
        let (userID, appID) = try await dependencies.player(context)
        let sessionID = context.caller.flatMap { RaveID($0.sessionID) }
        guard let provider = ProviderName.name(request.provider) else {
            throw IdentityError.invalidArgument("provider must be PROVIDER_GOOGLE, PROVIDER_APPLE or PROVIDER_FACEBOOK")
        }
        return try await dependencies.pool.transaction { transaction in
            let links = ProviderStore(database: transaction)
            let held = try await links.credentials(userID: userID)
            guard held.providers.contains(provider) else {
                throw IdentityError.notFound("this account is not connected to \(provider)")
            }
            guard Self.keepsALogin(held, without: provider) else {
                throw IdentityError.failedPrecondition(
                    "\(provider) is this account's last way to log in; add a password or another provider first")
            }
            _ = try await links.unlink(userID: userID, provider: provider)
            return .init(
                user: try await UserStore(database: transaction).user(userID, appID: appID).message,
                session: try await freshSession(userID: userID, appID: appID, sessionID: sessionID, in: transaction))
        }
    }

    // MARK: - Helpers

    /// Whether an account holding `held` can still log in once `provider`'s link is gone: a password or another
    /// provider.
    private static func keepsALogin(_ held: (hasPassword: Bool, providers: [String]), without provider: String) -> Bool
    {
        held.hasPassword || held.providers.contains { $0 != provider }
    }

    /// A new access token for the caller's session, carrying what `userID` may do now; nil without a live session.
    ///
    /// Its scopes follow the account state. The refresh token is left empty: the session keeps its own, so a game
    /// that ignores this token loses nothing.
    private func freshSession(
        userID: RaveID, appID: RaveID, sessionID: RaveID?, in transaction: PostgresTransaction
    ) async throws -> IdentityV1.SessionTokens? {
        guard let sessionID, try await SessionStore(database: transaction).isLive(sessionID: sessionID, userID: userID)
        else { return nil }
        let user = try await UserStore(database: transaction).user(userID, appID: nil)
        return try dependencies.tokens(
            userID: userID, appID: appID, sessionID: sessionID, refreshToken: "", accountState: user.globalAccountState)
    }

    /// Merges the caller into the account that owns the link, unless that account needs a second factor: an ID
    /// token alone must not let the caller's sessions act as a two-factor account.
    private func mergeIntoOwner(
        _ userID: RaveID, owner: RaveID, appID: RaveID, in transaction: PostgresTransaction
    ) async throws -> IdentityV1.Merge {
        if try await TwoFactorStore(database: transaction, secrets: dependencies.secretKeys).state(userID: owner)?
            .confirmed
            == true
        {
            throw IdentityError.failedPrecondition(
                "the other account uses two-factor; log in to it with this provider and complete the challenge to merge"
            )
        }
        let outcome = try await dependencies.mergeSaga.merge(source: userID, into: owner, appID: appID, in: transaction)
        guard let merge = try await MergeStore(database: transaction).merge(outcome.mergeID) else {
            throw IdentityError.internalError("merge \(outcome.mergeID.hex) vanished")
        }
        return merge
    }

    /// Checks the ID token and returns the provider's stored name with the identity it asserts.
    func verifyProviderToken(
        _ provider: IdentityV1.Provider, _ idToken: String, nonce: String
    ) throws -> (String, VerifiedIdentity) {
        guard let name = ProviderName.name(provider), let oidc = OIDCProvider(rawValue: name) else {
            throw IdentityError.invalidArgument("provider must be PROVIDER_GOOGLE, PROVIDER_APPLE or PROVIDER_FACEBOOK")
        }
        _ = try Validation.text(idToken, field: "id_token", maximum: 16384)
        do {
            let identity = try dependencies.providerVerifier.verify(
                idToken: idToken, from: oidc, nonce: nonce.isEmpty ? nil : nonce)
            guard identity.subject.utf8.count <= 255 else {
                throw IdentityError.unauthenticated("the ID token's subject is longer than 255 bytes")
            }
            return (name, identity)
        } catch let error as CryptoError {
            switch error.reason {
            case .invalidToken, .expiredToken: throw IdentityError.unauthenticated(error.message)
            case .invalidArgument: throw IdentityError.failedPrecondition(error.message)
            default: throw IdentityError.internalError("cannot verify \(name) ID tokens: \(error.message)")
            }
        }
    }
}
