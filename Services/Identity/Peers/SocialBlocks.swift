import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// Who blocked whom, as the social service records it: identity asks so that a player cannot find, by id, email
/// or username, someone who blocked them.
protocol BlockRegistry: Sendable {
    /// Whether `blocker` blocked `user`.
    func isBlocked(_ user: RaveID, by blocker: RaveID) async throws -> Bool
}

/// Social's `SocialInternal/IsBlocked` over an mTLS client that carries identity's service certificate.
struct SocialBlockRegistry: BlockRegistry {
    private let client: SocialV1.SocialInternalClient
    private let timeout: Duration

    init(caller: any RPCCaller, timeout: Duration = .seconds(2)) {
        client = SocialV1.SocialInternalClient(caller: caller)
        self.timeout = timeout
    }

    func isBlocked(_ user: RaveID, by blocker: RaveID) async throws -> Bool {
        do {
            let response = try await client.isBlocked(
                .init(userId: user.hex, otherUserId: blocker.hex), options: CallOptions(timeout: timeout))
            return response.otherBlockedUser
        } catch {
            // Failing closed: answering without social could reveal a player to someone they blocked.
            throw IdentityError.unavailable("cannot check blocks with the social service: \(error.message)")
        }
    }
}
