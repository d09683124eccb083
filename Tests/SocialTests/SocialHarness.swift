import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Testing

@testable import Identity
@testable import Social

#if canImport(Glibc)
import Glibc
#endif

/// A real identity service (its own database, served over mTLS by `ServiceRuntime`) and a social service on a
/// fresh migrated database whose directory reaches that identity through an mTLS client; social's handlers are
/// called in-process with constructed request contexts.
struct SocialHarness {
    static let group: EventLoopGroup = {
        do {
            return try EventLoopGroup(loopCount: 2)
        } catch {
            preconditionFailure("cannot start the test event loops: \(error)")
        }
    }()

    static func repositoryPath(_ relative: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(relative).path
    }

    static var socialMigrations: String { repositoryPath("Services/Social/Migrations") }
    static var identityMigrations: String { repositoryPath("Services/Identity/Migrations") }

    let dependencies: SocialDependencies
    let identity: IdentityDependencies
    let identityPort: Int
    let certificates: String
    let appID: String
    let publisherID: String
    var player: Social.PlayerHandlers { Social.PlayerHandlers(dependencies: dependencies) }
    var admin: Social.AdminHandlers { Social.AdminHandlers(dependencies: dependencies) }
    var internalHandlers: Social.InternalHandlers { Social.InternalHandlers(dependencies: dependencies) }
    var merge: SocialMergeParticipant { SocialMergeParticipant(dependencies: dependencies) }

    /// Runs `body` with identity and social on fresh databases, torn down afterwards.
    static func with(
        maxListMembers: Int = 5_000, poolSize: Int = 4, _ body: (SocialHarness) async throws -> Void
    ) async throws {
        let certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-social-\(UUID())").path
        try DevelopmentCertificates.write(to: certificates, services: ["identity", "social", "gateway", "push"])
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        try await withDatabase(prefix: "rave_social_identity_") { identityURL in
            var identityConfiguration = IdentityConfiguration(secretKeys: try SecretKeyFile.ring())
            identityConfiguration.passwordParameters = .testing
            let fixed = identityConfiguration
            let runtime = try await ServiceRuntime.start(
                name: "identity",
                environment: [
                    "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
                    "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "1s",
                    "RAVE_DATABASE_URL": identityURL, "RAVE_DB_POOL_SIZE": "4",
                ], migrations: .directory(identityMigrations)
            ) { context in
                try await IdentityDependencies.start(pool: context.pool, configuration: fixed).rpcServices
            }
            let running = Task { try await runtime.run() }
            let client = RPCClient(
                host: "127.0.0.1", port: runtime.rpcPort, tls: try clientTLS(certificates, name: "social"),
                group: group)
            var failure: (any Error)?
            do {
                let identity = try await IdentityDependencies.start(pool: runtime.context.pool, configuration: fixed)
                let applications = ApplicationStore(database: runtime.context.pool)
                let publisher = try await applications.createPublisher(name: "Publisher")
                let app = try await applications.createApplication(
                    publisherID: try #require(RaveID(publisher.publisherId)), name: "Game", settings: .init())
                try await withDatabase(prefix: "rave_social_test_") { socialURL in
                    let pool = try PostgresPool(
                        configuration: ScratchDatabase.poolConfiguration(url: socialURL, size: poolSize), group: group)
                    do {
                        _ = try await Migrator(pool: pool, directory: socialMigrations).migrate()
                        var configuration = SocialConfiguration()
                        configuration.maxListMembers = maxListMembers
                        let service = SocialDependencies(
                            pool: pool, directory: IdentityUserDirectory(caller: client), configuration: configuration,
                            loop: group.next(), logger: Logger(label: "social-test", level: .warning))
                        try await withFriendIDCache(service) {
                            try await body(
                                SocialHarness(
                                    dependencies: service, identity: identity, identityPort: runtime.rpcPort,
                                    certificates: certificates, appID: app.id.hex, publisherID: publisher.publisherId))
                        }
                    } catch {
                        pool.shutdown()
                        throw error
                    }
                    pool.shutdown()
                }
            } catch {
                failure = error
            }
            client.close()
            runtime.triggerShutdown()
            try await running.value
            if let failure { throw failure }
        }
    }

    /// Runs `body` while the service's friend id cache listens, as `SocialMain` runs it.
    static func withFriendIDCache(_ service: SocialDependencies, _ body: () async throws -> Void) async throws {
        let cache = Task { try await service.friendIDs.run() }
        var failure: (any Error)?
        do {
            try await waitUntil("the friend id cache listens") { service.friendIDs.isListening }
            try await body()
        } catch {
            failure = error
        }
        await service.friendIDs.shutdown()
        try await cache.value
        if let failure { throw failure }
    }

    /// Polls `condition` every 20 ms for up to 10 s (a bound for a stuck test, not a latency claim).
    static func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
        for _ in 0..<500 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PostgresError(.client, "gave up waiting until \(what)")
    }

    static func clientTLS(_ certificates: String, name: String) throws -> TLSContext {
        try TLSContext(
            .client(
                trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/\(name).pem",
                privateKeyPath: "\(certificates)/\(name)-key.pem"))
    }

    /// Creates an empty database, passes its URL to `body`, and drops it afterwards.
    static func withDatabase(prefix: String, _ body: (String) async throws -> Void) async throws {
        try await ScratchDatabase.with(prefix: prefix, body)
    }

    // MARK: - Users and contexts

    /// A test player: their Rave ID and the context their calls carry.
    struct Player {
        var id: String
        var context: RequestContext
    }

    /// A new guest of the harness's app, then personalized with `displayName` and a username.
    func makePlayer(_ displayName: String, email: String? = nil, appID: String? = nil) async throws -> Player {
        let app = appID ?? self.appID
        let device = IdentityV1.DeviceInfo(deviceId: "device-\(UUID())", name: "phone", platform: "ios")
        let identityPlayer = Identity.PlayerHandlers(dependencies: identity)
        let login: IdentityV1.LoginResponse
        if let email {
            login = try await identityPlayer.signUp(
                .init(
                    appId: app, device: device, email: email, password: "correct horse battery", birthYear: 1990,
                    country: "FR"),
                context: Self.context(caller: nil))
        } else {
            login = try await identityPlayer.guestLogin(
                .init(appId: app, device: device), context: Self.context(caller: nil))
        }
        let userID = login.user?.profile?.userId ?? ""
        if email != nil {
            // Identity matches only verified emails, and has no verification flow yet: as if the player had proved it.
            _ = try await identity.pool.query(
                "UPDATE users SET email_verified = true WHERE id = $1", [RaveID(userID)])
        }
        // Identity refuses a caller whose session it does not know, as for any ended session.
        var sessionID = ""
        if case .tokens(let tokens)? = login.outcome { sessionID = tokens.sessionId }
        let caller = Caller(userID: userID, appID: app, sessionID: sessionID, scopes: ["player"])
        _ = try await identityPlayer.updateCurrentUser(
            .init(
                username: .init(value: "u" + String(RaveID.random().hex.prefix(12))),
                displayName: .init(value: displayName), pictureUrl: .init(value: "https://pictures.test/\(displayName)")
            ),
            context: Self.context(caller: caller))
        return Player(id: userID, context: Self.context(caller: caller))
    }

    /// The username identity gave a player in `makePlayer`.
    func username(of player: Player) async throws -> String {
        let found = try await Identity.InternalHandlers(dependencies: identity).getUsers(
            .init(userIds: [player.id]), context: Self.context(caller: nil, service: true))
        return found.users.first?.username ?? ""
    }

    /// Another application of the harness's publisher.
    func makeApplication() async throws -> String {
        let app = try await ApplicationStore(database: identity.pool).createApplication(
            publisherID: try #require(RaveID(publisherID)), name: "Other game", settings: .init())
        return app.id.hex
    }

    /// Changes a player's display name in identity.
    func rename(_ player: Player, to displayName: String) async throws {
        _ = try await Identity.PlayerHandlers(dependencies: identity).updateCurrentUser(
            .init(displayName: .init(value: displayName)), context: player.context)
    }

    /// The email address a player signed up with.
    func email(of player: Player) async throws -> String {
        try await identity.pool.query("SELECT email FROM users WHERE id = $1", [RaveID(player.id)]).first?.decode(
            String.self, column: "email") ?? ""
    }

    static func context(caller: Caller?, service: Bool = false) -> RequestContext {
        RequestContext(
            requestID: "test-\(RaveID.random().hex.prefix(8))", method: "test", deadline: UInt64.max,
            metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: service ? "test-service" : nil),
            caller: caller, logger: Logger(label: "social-test"))
    }

    static let serviceContext = context(caller: nil, service: true)
    static let adminContext = context(caller: Caller(userID: "", appID: "", sessionID: "", scopes: ["admin"]))
}

/// A reference by Rave ID.
func byID(_ player: SocialHarness.Player) -> SocialV1.UserReference { .init(key: .userId(player.id)) }

/// The status code an RPC-mapped error of `body` carries, or nil when it succeeds.
func statusCode(_ body: () async throws -> Void) async -> StatusCode? {
    do {
        try await body()
        return nil
    } catch {
        return RPCError(mapping: error, requestID: "test").code
    }
}
