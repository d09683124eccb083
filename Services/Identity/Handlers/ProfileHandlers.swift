import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// The current user's profile, finding users, random users, merged identities and app data keys.
extension PlayerHandlers {
    func getCurrentUser(
        _ request: IdentityV1.GetCurrentUserRequest, context: RequestContext
    ) async throws -> IdentityV1.GetCurrentUserResponse {
        let (userID, appID) = try await dependencies.player(context)
        let user = try await UserStore(database: dependencies.pool).user(userID, appID: appID)
        return IdentityV1.GetCurrentUserResponse(user: user.message)
    }

    func updateCurrentUser(
        _ request: IdentityV1.UpdateCurrentUserRequest, context: RequestContext
    ) async throws -> IdentityV1.UpdateCurrentUserResponse {
        let (userID, appID) = try await dependencies.player(context)
        let application = try await dependencies.applications.application(appID)
        var changes = ProfileStore.Changes()
        changes.username = try request.username.map { try Self.cleared($0.value) { try Validation.username($0) } }
        let displayName = try request.displayName.map {
            try Self.cleared($0.value) { try Validation.displayName($0) }
        }
        let pictureURL = try request.pictureUrl.map { try Self.cleared($0.value) { try Validation.pictureURL($0) } }
        if application.settings.displayNameScope == .application {
            changes.appDisplayName = displayName
        } else {
            changes.displayName = displayName
        }
        if application.settings.pictureScope == .application {
            changes.appPictureURL = pictureURL
        } else {
            changes.pictureURL = pictureURL
        }
        changes.email = try request.email.map { try Self.cleared($0.value) { try Validation.email($0) } }
        changes.birthDate = try request.birthDate.map { try Self.cleared($0.value) { try Validation.birthDate($0) } }
        changes.gender = try request.gender.map {
            try Self.cleared($0.value) { try Validation.text($0, field: "gender", maximum: 32) }
        }
        changes.country = try request.country.map { try Self.cleared($0.value) { try Validation.country($0) } }
        let user = try await dependencies.pool.transaction { transaction in
            try await ProfileStore(database: transaction).update(userID: userID, appID: appID, changes: changes)
            return try await UserStore(database: transaction).user(userID, appID: appID)
        }
        return IdentityV1.UpdateCurrentUserResponse(user: user.message)
    }

    func findUser(
        _ request: IdentityV1.FindUserRequest, context: RequestContext
    ) async throws -> IdentityV1.FindUserResponse {
        let (userID, appID) = try await dependencies.player(context)
        let users = UserStore(database: dependencies.pool)
        let key: IdentityV1.UserReference.Key
        switch request.key {
        case .userId(let text): key = .userId(text)
        case .email(let email): key = .email(email)
        case .username(let name): key = .username(name)
        case nil: throw IdentityError.invalidArgument("set one of user_id, email or username")
        }
        // Guessing emails or usernames is how accounts are enumerated: those lookups are counted per caller and
        // address, whatever they find (Rave IDs are not guessable).
        if case .userId = key {
        } else {
            try dependencies.lookups.charge(user: userID.hex, address: context.metadata["rave-client-address"])
        }
        // An email finds only a verified email of a player of this app's publisher; anything else is "no user
        // matches", exactly like an unknown email.
        let publisher = try await dependencies.applications.application(appID).publisherID
        let found = try await users.userID(matching: key, emailPublisher: publisher)
        // Someone who blocked the caller looks, to the caller, like nobody: the same answer as an unknown user.
        if let found, found != userID, let blocks = dependencies.blocks, try await blocks.isBlocked(userID, by: found) {
            throw IdentityError.notFound("no user matches")
        }
        guard let found, let user = try await users.users([found], appID: appID)[found] else {
            throw IdentityError.notFound("no user matches")
        }
        return IdentityV1.FindUserResponse(user: user.profile)
    }

    func getRandomUsers(
        _ request: IdentityV1.GetRandomUsersRequest, context: RequestContext
    ) async throws -> IdentityV1.GetRandomUsersResponse {
        let (userID, appID) = try await dependencies.player(context)
        let limit = try RequestLimits.randomUsers.check(request.limit, orThrow: IdentityError.invalidArgument)
        let ids = try await DeviceLoginStore(database: dependencies.pool).randomUsers(
            appID: appID, excluding: userID, limit: limit)
        let users = try await UserStore(database: dependencies.pool).users(ids, appID: appID)
        return IdentityV1.GetRandomUsersResponse(users: ids.compactMap { users[$0]?.profile })
    }

    func getMergedIdentities(
        _ request: IdentityV1.GetMergedIdentitiesRequest, context: RequestContext
    ) async throws -> IdentityV1.GetMergedIdentitiesResponse {
        let (userID, _) = try await dependencies.player(context)
        let merged = try await MergeStore(database: dependencies.pool).mergedIdentities(of: userID)
        return IdentityV1.GetMergedIdentitiesResponse(userIds: merged.map(\.hex))
    }

    func getAppDataKeys(
        _ request: IdentityV1.GetAppDataKeysRequest, context: RequestContext
    ) async throws -> IdentityV1.GetAppDataKeysResponse {
        let (userID, appID) = try await dependencies.player(context)
        return try await dependencies.pool.transaction { transaction in
            let store = DeviceLoginStore(database: transaction)
            // A user who never logged in to this app (a merged session's target) gets the key at first use.
            try await store.recordAppUse(appID: appID, userID: userID)
            let keys = try await store.appDataKeys(userID: userID, appID: appID)
            return IdentityV1.GetAppDataKeysResponse(
                selectedKey: keys?.selected ?? "", candidates: keys?.candidates ?? [])
        }
    }

    func selectAppDataKey(
        _ request: IdentityV1.SelectAppDataKeyRequest, context: RequestContext
    ) async throws -> IdentityV1.SelectAppDataKeyResponse {
        let (userID, appID) = try await dependencies.player(context)
        let key = try Validation.raveID(request.key, field: "key").hex
        return try await dependencies.pool.transaction { transaction in
            let store = DeviceLoginStore(database: transaction)
            guard let keys = try await store.appDataKeys(userID: userID, appID: appID) else {
                throw IdentityError.failedPrecondition("the user has no app data key for this app yet")
            }
            if keys.selected == key, keys.candidates.isEmpty {
                return IdentityV1.SelectAppDataKeyResponse(selectedKey: key)
            }
            guard keys.candidates.contains(key) else {
                throw IdentityError.invalidArgument("key must be one of the candidates \(keys.candidates), got \(key)")
            }
            try await store.selectAppDataKey(userID: userID, appID: appID, key: key)
            return IdentityV1.SelectAppDataKeyResponse(selectedKey: key)
        }
    }

    /// An empty value clears the field; anything else must pass `validate`.
    private static func cleared<Value>(
        _ value: String, _ validate: (String) throws -> Value
    ) throws -> Value? {
        value.isEmpty ? nil : try validate(value)
    }
}
