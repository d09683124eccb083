import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTestSupport
import Synchronization

@testable import Wallet

/// Identity's `ResolveUsers` as the wallet calls it, answered from memory: the users tests made, and merges.
///
/// Serves only that method rather than conforming to `IdentityInternalHandler`, so identity growing its internal
/// API does not break these tests; the method name and messages are the generated ones.
final class StandInIdentity: RPCService {
    static let serviceName = IdentityV1.IdentityInternalClient.serviceName

    private struct State {
        var users: Set<RaveID> = []
        var mergedInto: [RaveID: RaveID] = [:]
    }

    private let state = Mutex(State())

    /// Makes `user` known, as a login would.
    func add(_ user: RaveID) {
        state.withLock { _ = $0.users.insert(user) }
    }

    func merge(_ source: RaveID, into target: RaveID) {
        state.withLock { $0.mergedInto[source] = target }
    }

    var methods: [RPCMethod] {
        [
            RPCMethod(name: "\(Self.serviceName)/ResolveUsers") { bytes, context in
                let request = try IdentityV1.ResolveUsersRequest(protobufBytes: bytes)
                let users = self.state.withLock { state in
                    request.userIds.map { text -> IdentityV1.ResolvedUser in
                        guard let id = RaveID(wire: text) else { return IdentityV1.ResolvedUser(requestedId: text) }
                        let canonical = state.mergedInto[id] ?? id
                        let known = state.users.contains(canonical)
                        return IdentityV1.ResolvedUser(requestedId: text, canonicalId: known ? canonical.hex : "")
                    }
                }
                return IdentityV1.ResolveUsersResponse(users: users).protobufBytes()
            }
        ]
    }
}

/// A `StandInIdentity` behind a real mTLS server, reached by a client presenting the wallet's certificate.
final class IdentityPeer: Sendable {
    let identity = StandInIdentity()
    private let peers: StandInPeers

    /// One for the in-process tests of the whole run: its users are random ids, so tests never meet.
    static let shared: IdentityPeer = {
        do {
            return try IdentityPeer()
        } catch {
            preconditionFailure("cannot start the stand-in identity: \(error)")
        }
    }()

    /// `certificates` is a directory that already holds a CA and "wallet" and "identity" certificates (shared with
    /// a wallet runtime or process); without it the peer writes its own.
    init(certificates: String? = nil) throws {
        peers = try StandInPeers(
            [identity], serverName: "identity", clientName: "wallet", certificates: certificates,
            group: WalletFixture.group)
    }

    var certificates: String { peers.certificates }

    /// What a wallet process or runtime sets as `RAVE_WALLET_IDENTITY_ADDRESS`.
    var address: String { peers.address }

    /// The production directory, reaching the stand-in over mTLS.
    var directory: IdentityUserDirectory { IdentityUserDirectory(identity: peers.client) }

    func shutdown() async { await peers.shutdown() }
}
