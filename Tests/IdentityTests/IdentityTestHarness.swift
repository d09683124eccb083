import Foundation
import RaveEvents
import RaveMessages
import RaveOutbox
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

@testable import Identity

#if canImport(Glibc)
import Glibc
#endif

/// A migrated throwaway database with an identity service on it, plus helpers to call handlers in-process.
struct IdentityHarness {
    static let group: EventLoopGroup = {
        do {
            return try EventLoopGroup(loopCount: 2)
        } catch {
            preconditionFailure("cannot start the test event loops: \(error)")
        }
    }()

    static var migrationsDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Services/Identity/Migrations").path
    }

    let dependencies: IdentityDependencies
    let pool: PostgresPool
    var player: PlayerHandlers { PlayerHandlers(dependencies: dependencies) }
    var admin: AdminHandlers { AdminHandlers(dependencies: dependencies) }
    var internalHandlers: InternalHandlers { InternalHandlers(dependencies: dependencies) }

    /// Runs `body` against a fresh database (created, migrated, dropped afterwards); `clock` is the login
    /// throttle's.
    static func with(
        configure: (inout IdentityConfiguration) -> Void = { _ in }, clock: TestClock? = nil,
        _ body: (IdentityHarness) async throws -> Void
    ) async throws {
        try await withDatabase { url in
            let pool = try PostgresPool(
                configuration: ScratchDatabase.poolConfiguration(url: url, size: 4), group: group)
            var failure: (any Error)?
            do {
                _ = try await Migrator(pool: pool, directory: migrationsDirectory).migrate()
                var identity = IdentityConfiguration(secretKeys: try SecretKeyFile.ring())
                identity.passwordParameters = .testing
                configure(&identity)
                let now: @Sendable () -> Date
                if let clock { now = { clock.now } } else { now = { Date() } }
                let service = try await IdentityDependencies.start(pool: pool, configuration: identity, clock: now)
                try await body(IdentityHarness(dependencies: service, pool: pool))
            } catch {
                failure = error
            }
            pool.shutdown()
            if let failure { throw failure }
        }
    }

    /// Creates an empty database, passes its connection URL to `body`, and drops it afterwards.
    static func withDatabase(_ body: (String) async throws -> Void) async throws {
        try await ScratchDatabase.with(prefix: "rave_identity_test_", body)
    }

    // MARK: - Contexts

    static func context(caller: Caller?, service: Bool = false, metadata: [String: String] = [:]) -> RequestContext {
        RequestContext(
            requestID: "test-\(RaveID.random().hex.prefix(8))", method: "test", deadline: UInt64.max,
            metadata: metadata,
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: service ? "test-service" : nil),
            caller: caller, logger: Logger(label: "identity-test"))
    }

    static let anonymous = context(caller: nil)
    static let adminContext = context(caller: Caller(userID: "", appID: "", sessionID: "", scopes: ["admin"]))
    static let serviceContext = context(caller: nil, service: true)

    /// The context of a player signed in with `tokens` (as the gateway would build it from the access token).
    static func playerContext(_ login: IdentityV1.LoginResponse, appID: String) -> RequestContext {
        var sessionID = ""
        if case .tokens(let tokens) = login.outcome { sessionID = tokens.sessionId }
        return context(
            caller: Caller(
                userID: login.user?.profile?.userId ?? "", appID: appID, sessionID: sessionID, scopes: ["player"]))
    }

    // MARK: - Set-up helpers

    /// A new publisher with one application using `settings`.
    func makeApplication(
        settings: IdentityV1.ApplicationSettings? = nil, publisherID: String? = nil
    ) async throws -> IdentityV1.Application {
        let publisher: String
        if let publisherID {
            publisher = publisherID
        } else {
            publisher =
                try await admin.createPublisher(.init(name: "Publisher"), context: Self.adminContext).publisher?
                .publisherId ?? ""
        }
        let response = try await admin.createApplication(
            .init(publisherId: publisher, name: "Game", settings: settings), context: Self.adminContext)
        return try #require(response.application)
    }

    func guestLogin(appID: String, deviceID: String) async throws -> IdentityV1.LoginResponse {
        try await player.guestLogin(
            .init(appId: appID, device: .init(deviceId: deviceID, name: "phone", platform: "ios")),
            context: Self.anonymous)
    }
}

extension IdentityV1.LoginResponse {
    var userID: String { user?.profile?.userId ?? "" }
    var sessionTokens: IdentityV1.SessionTokens? {
        if case .tokens(let tokens) = outcome { return tokens }
        return nil
    }
}

/// A clock tests move by hand (the login throttle's), so windows pass without sleeping.
final class TestClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_900_000_000)) {
        current = Mutex(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// The status code and message of the `IdentityError` (in-process) or `RPCError` (over the wire) `body` throws, or
/// nil when it succeeds or throws something else.
func statusCode(_ body: () async throws -> Void) async -> (code: StatusCode, message: String)? {
    do {
        try await body()
        return nil
    } catch let error as IdentityError {
        return (error.code, error.message)
    } catch let error as RPCError {
        return (error.code, error.message)
    } catch {
        return nil
    }
}

extension IdentityHarness {
    /// Identity's mTLS client context, from its certificate in `certificates`.
    static func identityClientTLS(certificates: String) throws -> TLSContext {
        try TLSContext(
            .client(
                trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/identity.pem",
                privateKeyPath: "\(certificates)/identity-key.pem"))
    }

    /// The outbox delivery (saga participants, event sinks, mail) without the production waits.
    ///
    /// It polls every 50 ms and retries after 20 ms (at most 200 ms apart). Participants are called over mTLS with
    /// identity's certificate of `certificates`; without certificates, none is.
    func participantDelivery(
        to participants: [IdentityConfiguration.MergeParticipant] = [], certificates: String? = nil,
        events: EventSinks? = nil, mail: IdentityMailer? = nil
    ) throws -> MergeDelivery {
        var dispatcher = OutboxDispatcher.Configuration()
        dispatcher.pollInterval = .milliseconds(50)
        dispatcher.initialBackoff = .milliseconds(20)
        dispatcher.maximumBackoff = .milliseconds(200)
        return MergeDelivery(
            pool: pool, participants: participants, events: events, mail: mail,
            tls: try certificates.map { try Self.identityClientTLS(certificates: $0) },
            group: Self.group, dispatcherConfiguration: dispatcher, callTimeout: .seconds(5),
            logger: Logger(label: "participant-delivery", level: .critical))
    }
}
