import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry

/// The production directory: identity's `IdentityInternal` for users and provider links, social's
/// `SocialInternal/IsBlocked` for blocks.
///
/// Social answers blocks one pair per call, so the pairs of one send go out concurrently over the multiplexed
/// connection: a send to 20 costs one round trip of waiting, not twenty.
struct PeerDirectory: PlayerDirectory {
    private let identity: IdentityV1.IdentityInternalClient
    private let social: SocialV1.SocialInternalClient
    private let logger: Logger
    private let options = CallOptions(timeout: .seconds(2), maxRetries: 1)

    /// Both callers are mTLS clients presenting gifts' certificate, which the peers require of internal calls.
    init(identity: any RPCCaller, social: any RPCCaller, logger: Logger) {
        self.identity = IdentityV1.IdentityInternalClient(caller: identity)
        self.social = SocialV1.SocialInternalClient(caller: social)
        self.logger = logger
    }

    func canonicalIDs(of ids: [RaveID]) async throws -> [RaveID: RaveID] {
        guard !ids.isEmpty else { return [:] }
        let response: IdentityV1.ResolveUsersResponse
        do {
            response = try await identity.resolveUsers(.init(userIds: ids.map(\.hex)), options: options)
        } catch {
            throw GiftsError.unavailable("identity could not confirm the recipients: \(error)")
        }
        var resolved: [RaveID: RaveID] = [:]
        for user in response.users {
            guard let requested = RaveID(user.requestedId), let canonical = RaveID(user.canonicalId) else { continue }
            resolved[requested] = canonical
        }
        return resolved
    }

    func displayName(of user: RaveID, appID: RaveID) async -> String {
        do {
            let response = try await identity.getUsers(
                .init(userIds: [user.hex], appId: appID.hex), options: options)
            return response.users.first?.displayName ?? ""
        } catch {
            logger.warning("identity did not name a sender; the event goes out without it", [("error", "\(error)")])
            return ""
        }
    }

    func blockedPeers(of user: RaveID, among others: [RaveID]) async throws -> Set<RaveID> {
        let social = social
        let options = options
        do {
            return try await withThrowingTaskGroup(of: RaveID?.self) { group in
                for other in Set(others) {
                    group.addTask {
                        let answer = try await social.isBlocked(
                            .init(userId: user.hex, otherUserId: other.hex), options: options)
                        return answer.blocked ? other : nil
                    }
                }
                var blocked: Set<RaveID> = []
                for try await other in group {
                    if let other { blocked.insert(other) }
                }
                return blocked
            }
        } catch {
            throw GiftsError.unavailable("social could not confirm blocks: \(error)")
        }
    }

    func linkedUsers(of subjects: [ExternalSubject]) async throws -> [ExternalSubject: RaveID] {
        guard !subjects.isEmpty else { return [:] }
        let request = IdentityV1.LookupExternalRequest(
            subjects: subjects.map {
                IdentityV1.ExternalSubject(provider: IdentityV1.Provider(rawValue: $0.provider), subject: $0.subject)
            })
        let response: IdentityV1.LookupExternalResponse
        do {
            response = try await identity.lookupExternal(request, options: options)
        } catch {
            throw GiftsError.unavailable("identity could not look up the invited accounts: \(error)")
        }
        var linked: [ExternalSubject: RaveID] = [:]
        for match in response.matches {
            guard case .subject(let subject)? = match.key, let user = RaveID(match.userId) else { continue }
            linked[ExternalSubject(provider: subject.provider.rawValue, subject: subject.subject)] = user
        }
        return linked
    }
}
