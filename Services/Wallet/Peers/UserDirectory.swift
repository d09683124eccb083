import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// What identity knows of a user an operator names.
package enum UserStanding: Hashable, Sendable {
    /// A user who can play and so reach the money.
    case active
    /// A merged source: its data moved to the target, and money sent to it would reach nobody.
    case mergedInto(RaveID)
    /// No such user.
    case unknown
}

/// Asks whether users exist before money moves to or from them.
package protocol UserDirectory: Sendable {
    func standing(of user: RaveID) async throws -> UserStanding
}

/// The production directory: identity's `IdentityInternal/ResolveUsers`, over mTLS with the wallet's certificate.
struct IdentityUserDirectory: UserDirectory {
    private let identity: IdentityV1.IdentityInternalClient
    private let options = CallOptions(timeout: .seconds(2), maxRetries: 1)

    init(identity: any RPCCaller) {
        self.identity = IdentityV1.IdentityInternalClient(caller: identity)
    }

    func standing(of user: RaveID) async throws -> UserStanding {
        let response: IdentityV1.ResolveUsersResponse
        do {
            response = try await identity.resolveUsers(.init(userIds: [user.hex]), options: options)
        } catch {
            throw WalletError(.unavailable, "identity could not confirm that user \(user.hex) exists: \(error.message)")
        }
        guard let answer = response.users.first(where: { $0.requestedId == user.hex }),
            let canonical = RaveID(wire: answer.canonicalId)
        else { return .unknown }
        return canonical == user ? .active : .mergedInto(canonical)
    }
}
