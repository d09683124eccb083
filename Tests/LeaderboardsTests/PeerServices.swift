import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization

@testable import Leaderboards

/// Social's internal methods as leaderboards calls them, answered from memory.
final class InProcessSocial: SocialV1.SocialInternalHandler {
    private let friends = Mutex<[String: [String]]>([:])
    private let unreachable = Mutex<Set<String>>([])

    /// `user`'s friends list, as social would return it (wire-form ids).
    func setFriends(_ friendIDs: [RaveID], of user: RaveID) {
        friends.withLock { $0[user.hex] = friendIDs.map(\.hex) }
    }

    /// Calls about `user` fail as an overloaded social would.
    func failCalls(about user: RaveID) {
        unreachable.withLock { _ = $0.insert(user.hex) }
    }

    func friendIds(
        _ request: SocialV1.FriendIdsRequest, context: RequestContext
    ) async throws -> SocialV1.FriendIdsResponse {
        // Social refuses internal calls from anything but a service certificate; so does this stand-in.
        if unreachable.withLock({ $0.contains(request.userId) }) { throw RPCError.unavailable("social is overloaded") }
        return SocialV1.FriendIdsResponse(userIds: friends.withLock { $0[request.userId] ?? [] })
    }

    func followingIds(
        _ request: SocialV1.FollowingIdsRequest, context: RequestContext
    ) async throws -> SocialV1.FollowingIdsResponse {
        throw RPCError.unimplemented("leaderboards does not read followers")
    }

    func isBlocked(
        _ request: SocialV1.IsBlockedRequest, context: RequestContext
    ) async throws -> SocialV1.IsBlockedResponse {
        throw RPCError.unimplemented("leaderboards does not read blocks")
    }
}

/// Identity's `IdentityInternal/GetUsers` answered from memory, counting calls so tests see the cache at work.
///
/// Serves that one method rather than conforming to `IdentityInternalHandler`, so identity growing its internal
/// API does not break these tests; the method name and messages are still the generated ones.
final class InProcessIdentity: RPCService {
    static let serviceName = IdentityV1.IdentityInternalClient.serviceName

    private struct State {
        var names: [String: String] = [:]
        var isDown = false
        var getUsersCalls = 0
    }

    private let state = Mutex(State())

    func setName(_ name: String, of user: RaveID) {
        state.withLock { $0.names[user.hex] = name }
    }

    /// While down, every GetUsers call fails.
    func setDown(_ isDown: Bool) {
        state.withLock { $0.isDown = isDown }
    }

    var getUsersCalls: Int { state.withLock { $0.getUsersCalls } }

    var methods: [RPCMethod] {
        [
            RPCMethod(name: "\(Self.serviceName)/GetUsers") { request, context in
                try await self.getUsers(IdentityV1.GetUsersRequest(protobufBytes: request), context: context)
                    .protobufBytes()
            }
        ]
    }

    func getUsers(
        _ request: IdentityV1.GetUsersRequest, context: RequestContext
    ) async throws -> IdentityV1.GetUsersResponse {
        // Identity refuses internal calls from anything but a service certificate; so does this stand-in.
        let (names, isDown) = state.withLock { state in
            state.getUsersCalls += 1
            return (state.names, state.isDown)
        }
        if isDown { throw RPCError.unavailable("identity is restarting") }
        return IdentityV1.GetUsersResponse(
            users: request.userIds.compactMap { id in
                names[id].map { IdentityV1.UserProfile(userId: id, displayName: $0, pictureUrl: "https://p/\(id)") }
            })
    }
}

/// Social and identity stand-ins behind one real mTLS server on 127.0.0.1, and an mTLS client presenting the
/// leaderboards certificate, as production wires them.
final class PeerHarness: Sendable {
    let social = InProcessSocial()
    let identity = InProcessIdentity()
    let client: RPCClient
    private let server: RPCServer
    private let certificates: String
    private let ownsCertificates: Bool

    /// `certificates` is a directory that already holds a CA and "leaderboards" and "social" certificates (shared
    /// with a service runtime); without it the harness writes its own.
    init(certificates: String? = nil) throws {
        ownsCertificates = certificates == nil
        self.certificates =
            certificates
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("rave-lb-peers-\(UUID())").path
        if ownsCertificates {
            try DevelopmentCertificates.write(to: self.certificates, services: ["leaderboards", "social"])
        }
        let directory = self.certificates
        server = RPCServer(
            services: [social, identity], access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(directory)/social.pem", privateKeyPath: "\(directory)/social-key.pem",
                    trustRootsPath: "\(directory)/ca.pem", requireClientCertificate: true)),
            group: TestDatabase.group, logger: Logger(label: "peers", level: .critical))
        try server.start()
        client = RPCClient(
            host: "127.0.0.1", port: server.localPort,
            tls: try TLSContext(
                .client(
                    trustRootsPath: "\(directory)/ca.pem", certificateChainPath: "\(directory)/leaderboards.pem",
                    privateKeyPath: "\(directory)/leaderboards-key.pem")),
            group: TestDatabase.group, logger: Logger(label: "peers.client", level: .critical))
    }

    /// The port both stand-ins answer on.
    var port: Int { server.localPort }

    func shutdown() async {
        client.close()
        await server.shutdown()
        if ownsCertificates { try? FileManager.default.removeItem(atPath: certificates) }
    }
}
