import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Testing

@testable import Push

/// A throwaway database with the push migrations applied, plus the services and callers tests use.
struct PushFixture {
    /// The loops every test's connections run on; tests stay independent through their own databases.
    static var group: EventLoopGroup { ScratchDatabase.group }

    static let appID = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"

    let pool: PostgresPool
    /// The test database's connection string, for a `ServiceRuntime` of its own.
    let connectionString: String
    let clock: ManualClock
    let dependencies: PushDependencies
    var service: PlayerHandlers { PlayerHandlers(dependencies: dependencies) }
    var admin: AdminHandlers { AdminHandlers(dependencies: dependencies) }
    var internalService: InternalHandlers { InternalHandlers(dependencies: dependencies) }

    /// Runs `body` against a fresh migrated database whose clock starts at `now`; drops the database afterwards.
    static func with<Result>(
        now: Date = Date(timeIntervalSince1970: 1_767_268_800), _ body: (PushFixture) async throws -> Result
    ) async throws -> Result {
        try await ScratchDatabase.with(prefix: "rave_push_test_") { connectionString in
            let pool = try ScratchDatabase.pool(url: connectionString, size: 6)
            defer { pool.shutdown() }
            _ = try await Migrator(pool: pool, directory: PushMain.migrationsDirectory).migrate()
            let clock = ManualClock(now)
            let fixture = PushFixture(
                pool: pool, connectionString: connectionString, clock: clock,
                dependencies: PushDependencies(pool: pool, clock: clock))
            return try await body(fixture)
        }
    }

    /// Registers a token for `user` with every consent given unless overridden.
    @discardableResult
    func register(
        _ user: RaveID, token: String, platform: PushV1.Platform = .fcm, timeZone: String = "UTC",
        consent: PushV1.Consent = PushV1.Consent(push: true, advertising: true, nightAdvertising: true)
    ) async throws -> PushV1.TokenInfo? {
        let request = PushV1.RegisterTokenRequest(
            platform: platform, token: token, sandbox: false, consent: consent, options: nil, country: "KR",
            language: "ko", timeZone: timeZone)
        return try await service.registerToken(request, context: Self.playerContext(user)).info
    }

    func send(
        _ users: [RaveID], title: String = "Hello", category: PushV1.Category = .normal,
        nightPolicy: PushV1.NightPolicy = .hold, id: RaveID = .random()
    ) async throws -> PushV1.SendNotificationResponse {
        let notification = PushV1.Notification(
            title: title, body: "body", data: [PushV1.DataEntry(key: "k", value: "v")], category: category,
            collapseKey: "", ttlSeconds: 3600, nightPolicy: nightPolicy)
        return try await admin.sendNotification(
            PushV1.SendNotificationRequest(
                appId: Self.appID, userIds: users.map(\.hex), notification: notification,
                notificationId: id.hex),
            context: Self.adminContext())
    }

    /// The notification's deliveries as stored, whole tokens included (GetDeliveries masks them).
    func deliveries(_ id: String) async throws -> [PushV1.Delivery] {
        let notification = try #require(RaveID(wire: id))
        return try await dependencies.notifications.deliveries(of: notification, on: pool)
    }

    static func adminContext() -> RequestContext {
        context(caller: Caller(userID: "", appID: "", sessionID: "", scopes: [Caller.adminScope]))
    }

    static func playerContext(_ user: RaveID) -> RequestContext {
        context(caller: Caller(userID: user.hex, appID: appID, sessionID: "s", scopes: []))
    }

    static func serviceContext() -> RequestContext {
        var context = context(caller: nil)
        context.peer = PeerIdentity(address: "127.0.0.1:1", certificateCommonName: "gifts")
        return context
    }

    static func context(caller: Caller?) -> RequestContext {
        RequestContext(
            requestID: "test", method: "test", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: nil), caller: caller,
            logger: Logger(label: "push-test"))
    }
}

/// Expects `body` to fail with the status the RPC layer would answer, as a caller sees it.
func expectStatus<T>(
    _ code: StatusCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async {
    do {
        _ = try await body()
        Issue.record("expected status \(code), got success", sourceLocation: sourceLocation)
    } catch {
        let status = RPCError(mapping: error, requestID: "test")
        #expect(status.code == code, "\(status)", sourceLocation: sourceLocation)
    }
}

/// A UTC instant from its parts, for night-time tests.
func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int = 0) -> Date {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = .gmt
    return calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute)) ?? Date()
}
