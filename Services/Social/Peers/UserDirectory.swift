import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import Synchronization

/// What the social service shows of another user.
package struct DirectoryProfile: Sendable, Hashable {
    var userID: RaveID
    var displayName: String
    var pictureURL: String
}

/// How a player names another player.
package enum UserLookup: Sendable, Hashable {
    case id(RaveID)
    case email(String)
    case username(String)

    /// The reference as an error message shows it.
    var description: String {
        switch self {
        case .id(let id): "user_id \(id.hex)"
        case .email(let email): "email \"\(email)\""
        case .username(let name): "username \"\(name)\""
        }
    }
}

/// A provider account or an email address that may belong to a Rave user.
package enum ExternalIdentifier: Sendable, Hashable {
    case subject(IdentityV1.Provider, String)
    case email(String)
}

/// The identity service as social needs it: profiles, lookups, and who plays which application.
package protocol UserDirectory: Sendable {
    /// Display names and pictures as `appID` shows them (the global values when nil); unknown users are left out,
    /// merged ones are resolved.
    func profiles(of userIDs: [RaveID], appID: RaveID?) async throws -> [RaveID: DirectoryProfile]
    /// The user a player means, with the display name and picture `appID` shows (the global values when nil); nil
    /// when nobody matches.
    func findUser(_ lookup: UserLookup, appID: RaveID?) async throws -> DirectoryProfile?
    /// The Rave users behind provider subjects and emails; unmatched identifiers are left out.
    func match(_ identifiers: [ExternalIdentifier]) async throws -> [ExternalIdentifier: RaveID]
    /// Which of `userIDs` played `appID`.
    func users(among userIDs: [RaveID], whoPlayed appID: RaveID) async throws -> Set<RaveID>
    /// The publisher an application belongs to.
    func publisher(ofApplication appID: RaveID) async throws -> RaveID
}

/// The production directory: identity's `IdentityInternal` over one mTLS client carrying social's service
/// certificate, which alone authorises these calls, so social never speaks for a player or an operator.
///
/// Publishers are kept once learnt, because an application never changes publisher.
final class IdentityUserDirectory: UserDirectory {
    /// Identity takes at most this many ids per call.
    static let batchSize = 1000

    private let internalClient: IdentityV1.IdentityInternalClient
    private let timeout: Duration
    private let publishers = Mutex<[RaveID: RaveID]>([:])

    init(caller: any RPCCaller, timeout: Duration = .seconds(5)) {
        internalClient = IdentityV1.IdentityInternalClient(caller: caller)
        self.timeout = timeout
    }

    func profiles(of userIDs: [RaveID], appID: RaveID?) async throws -> [RaveID: DirectoryProfile] {
        var found: [RaveID: DirectoryProfile] = [:]
        var start = 0
        while start < userIDs.count {
            let batch = userIDs[start..<min(userIDs.count, start + Self.batchSize)]
            start += Self.batchSize
            let response = try await internalClient.getUsers(
                .init(userIds: batch.map(\.hex), appId: appID?.hex ?? ""),
                options: CallOptions(timeout: timeout))
            for user in response.users {
                guard let id = RaveID(user.userId) else { continue }
                found[id] = DirectoryProfile(userID: id, displayName: user.displayName, pictureURL: user.pictureUrl)
            }
        }
        return found
    }

    func findUser(_ lookup: UserLookup, appID: RaveID?) async throws -> DirectoryProfile? {
        let key: IdentityV1.UserReference.Key
        switch lookup {
        case .id(let id): key = .userId(id.hex)
        case .email(let email): key = .email(email)
        case .username(let name): key = .username(name)
        }
        let response = try await internalClient.findUsers(
            .init(references: [.init(key: key)], appId: appID?.hex ?? ""), options: CallOptions(timeout: timeout))
        guard let user = response.users.first?.user, let id = RaveID(user.userId) else { return nil }
        return DirectoryProfile(userID: id, displayName: user.displayName, pictureURL: user.pictureUrl)
    }

    func match(_ identifiers: [ExternalIdentifier]) async throws -> [ExternalIdentifier: RaveID] {
        var matches: [ExternalIdentifier: RaveID] = [:]
        var start = 0
        while start < identifiers.count {
            let batch = identifiers[start..<min(identifiers.count, start + Self.batchSize)]
            start += Self.batchSize
            var request = IdentityV1.LookupExternalRequest()
            for identifier in batch {
                switch identifier {
                case .subject(let provider, let subject):
                    request.subjects.append(.init(provider: provider, subject: subject))
                case .email(let email): request.emails.append(email)
                }
            }
            let response = try await internalClient.lookupExternal(request, options: CallOptions(timeout: timeout))
            for match in response.matches {
                guard let id = RaveID(match.userId) else { continue }
                switch match.key {
                case .subject(let subject): matches[.subject(subject.provider, subject.subject)] = id
                case .email(let email): matches[.email(email)] = id
                case nil: continue
                }
            }
        }
        return matches
    }

    func users(among userIDs: [RaveID], whoPlayed appID: RaveID) async throws -> Set<RaveID> {
        var players: Set<RaveID> = []
        var start = 0
        while start < userIDs.count {
            let batch = userIDs[start..<min(userIDs.count, start + Self.batchSize)]
            start += Self.batchSize
            let response = try await internalClient.usedApplications(
                .init(appId: appID.hex, userIds: batch.map(\.hex)), options: CallOptions(timeout: timeout))
            players.formUnion(response.userIds.compactMap { RaveID($0) })
        }
        return players
    }

    func publisher(ofApplication appID: RaveID) async throws -> RaveID {
        if let known = publishers.withLock({ $0[appID] }) { return known }
        let response = try await internalClient.getApplications(
            .init(appIds: [appID.hex]), options: CallOptions(timeout: timeout))
        guard let application = response.applications.first(where: { $0.appId == appID.hex }) else {
            throw SocialError.notFound("no application \(appID.hex)")
        }
        guard let publisher = RaveID(application.publisherId) else {
            throw SocialError.unavailable("identity returned no publisher for application \(appID.hex)")
        }
        publishers.withLock { $0[appID] = publisher }
        return publisher
    }
}
