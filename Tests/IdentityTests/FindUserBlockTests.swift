import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@testable import Identity

/// FindUser against a social service over real mTLS: a test server answers `SocialInternal/IsBlocked` from the
/// blocks each test sets.
@Suite struct FindUserBlockTests {
    @Test func blockerIsNotFoundByTheBlockedPlayerOnly() async throws {
        let social = BlockingSocial()
        try await withSocial(social) { blocks in
            try await IdentityHarness.with { harness in
                let service = try await IdentityDependencies.start(
                    pool: harness.pool, configuration: harness.dependencies.configuration, blocks: blocks)
                let player = Identity.PlayerHandlers(dependencies: service)
                let app = try await harness.makeApplication()
                let alice = try await harness.guestLogin(appID: app.appId, deviceID: "alice")
                let bob = try await harness.guestLogin(appID: app.appId, deviceID: "bob")
                let carol = try await harness.guestLogin(appID: app.appId, deviceID: "carol")
                let username = "blocker" + RaveID.random().hex.prefix(12)
                _ = try await player.updateCurrentUser(
                    .init(username: .init(value: username)),
                    context: IdentityHarness.playerContext(alice, appID: app.appId))
                social.block(bob.userID, by: alice.userID)
                let bobContext = IdentityHarness.playerContext(bob, appID: app.appId)

                for key: IdentityV1.FindUserRequest.Key in [.userId(alice.userID), .username(username)] {
                    let hidden = await statusCode {
                        _ = try await player.findUser(.init(key: key), context: bobContext)
                    }
                    #expect(hidden?.code == .notFound)
                    #expect(hidden?.message == "no user matches")
                }
                let byBlocker = try await player.findUser(
                    .init(key: .userId(bob.userID)), context: IdentityHarness.playerContext(alice, appID: app.appId))
                #expect(byBlocker.user?.userId == bob.userID)
                let byOther = try await player.findUser(
                    .init(key: .username(username)), context: IdentityHarness.playerContext(carol, appID: app.appId))
                #expect(byOther.user?.userId == alice.userID)
                let asked = social.questions
                _ = try await player.findUser(.init(key: .userId(bob.userID)), context: bobContext)
                #expect(social.questions == asked, "finding oneself needs no block check")
                #expect(social.callersWereServices)
            }
        }
    }

    @Test func unreachableSocialMakesFindUserUnavailable() async throws {
        let port = try await withSocial(BlockingSocial()) { _ in }
        let client = RPCClient(
            host: "127.0.0.1", port: port, tls: try Self.identityTLS(Self.certificates.path),
            group: IdentityHarness.group,
            logger: Logger(label: "social-client", level: .critical))
        defer { client.close() }
        try await IdentityHarness.with { harness in
            let service = try await IdentityDependencies.start(
                pool: harness.pool, configuration: harness.dependencies.configuration,
                blocks: SocialBlockRegistry(caller: client, timeout: .seconds(2)))
            let app = try await harness.makeApplication()
            let alice = try await harness.guestLogin(appID: app.appId, deviceID: "alice")
            let bob = try await harness.guestLogin(appID: app.appId, deviceID: "bob")
            let failure = await statusCode {
                _ = try await Identity.PlayerHandlers(dependencies: service).findUser(
                    .init(key: .userId(alice.userID)), context: IdentityHarness.playerContext(bob, appID: app.appId))
            }
            #expect(failure?.code == .unavailable)
        }
    }

    // MARK: - A social service over mTLS

    /// One set of development certificates for the suite; tests only read it.
    static let certificates: (path: String, error: (any Error)?) = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rave-blocks-\(UUID())").path
        do {
            try DevelopmentCertificates.write(to: path, services: ["identity", "social"])
            return (path, nil)
        } catch {
            return (path, error)
        }
    }()

    static func identityTLS(_ path: String) throws -> TLSContext {
        try TLSContext(
            .client(
                trustRootsPath: "\(path)/ca.pem", certificateChainPath: "\(path)/identity.pem",
                privateKeyPath: "\(path)/identity-key.pem"))
    }

    /// Serves `social` over mTLS on a loopback port for the duration of `body`, which gets a registry that reaches
    /// it with identity's certificate; returns the port, closed by then.
    @discardableResult
    func withSocial(
        _ social: BlockingSocial, _ body: (SocialBlockRegistry) async throws -> Void
    ) async throws -> Int {
        if let error = Self.certificates.error { throw error }
        let path = Self.certificates.path
        let server = RPCServer(
            services: [social], access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(path)/social.pem", privateKeyPath: "\(path)/social-key.pem",
                    trustRootsPath: "\(path)/ca.pem", requireClientCertificate: true)),
            group: IdentityHarness.group, logger: Logger(label: "social", level: .warning))
        try server.start()
        let port = server.localPort
        let client = RPCClient(
            host: "127.0.0.1", port: port, tls: try Self.identityTLS(path), group: IdentityHarness.group,
            logger: Logger(label: "social-client", level: .warning))
        var failure: (any Error)?
        do {
            try await body(SocialBlockRegistry(caller: client))
        } catch {
            failure = error
        }
        client.close()
        await server.shutdown()
        if let failure { throw failure }
        return port
    }
}

/// `SocialInternal` with only IsBlocked: blocks are set by the test.
final class BlockingSocial: SocialV1.SocialInternalHandler {
    private struct State {
        /// (blocker, blocked) pairs of hex ids.
        var blocks: Set<[String]> = []
        var questions = 0
        var callersWereServices = true
    }

    private let state = Mutex(State())

    var questions: Int { state.withLock { $0.questions } }
    var callersWereServices: Bool { state.withLock { $0.callersWereServices } }

    func block(_ blocked: String, by blocker: String) {
        state.withLock { _ = $0.blocks.insert([blocker, blocked]) }
    }

    func isBlocked(
        _ request: SocialV1.IsBlockedRequest, context: RequestContext
    ) async throws -> SocialV1.IsBlockedResponse {
        state.withLock { state in
            state.questions += 1
            state.callersWereServices = state.callersWereServices && context.peer.role == .service("identity")
            let userBlocked = state.blocks.contains([request.userId, request.otherUserId])
            let otherBlocked = state.blocks.contains([request.otherUserId, request.userId])
            return SocialV1.IsBlockedResponse(
                blocked: userBlocked || otherBlocked, userBlockedOther: userBlocked, otherBlockedUser: otherBlocked)
        }
    }

    func friendIds(
        _ request: SocialV1.FriendIdsRequest, context: RequestContext
    ) async throws -> SocialV1.FriendIdsResponse {
        throw RPCError.unimplemented("the test social service answers IsBlocked only")
    }

    func followingIds(
        _ request: SocialV1.FollowingIdsRequest, context: RequestContext
    ) async throws -> SocialV1.FollowingIdsResponse {
        throw RPCError.unimplemented("the test social service answers IsBlocked only")
    }
}
