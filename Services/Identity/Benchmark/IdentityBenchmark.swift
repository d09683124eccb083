import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTransport
import Synchronization

/// Throughput of identity's hot paths, called in-process against a real PostgreSQL (no RPC in the path): guest
/// logins of new devices, token refreshes, and ResolveUsers with 100 ids.
///
/// `identity bench` runs it against `RAVE_DATABASE_URL` (a scratch database: it is migrated and filled), prints a
/// summary and writes `.bench/identity.json`; tests run it briefly to keep it working.
struct IdentityBenchmark: Sendable {
    /// What to run; every field has a default fit for `make bench`.
    struct Parameters: Sendable {
        /// Seconds per measured operation.
        var seconds: Double = 5
        /// Calls in flight at once.
        var concurrency = 32
        /// Which operations to measure (all by default); one alone lets a profiler attribute CPU to it.
        var operations: Set<String> = IdentityBenchmark.operationNames
    }

    /// The operations, in the order they run.
    static let operationNames: Set<String> = [
        "guest_login_new_device", "guest_login_new_device_cross_app", "refresh_session", "resolve_users_100",
        "password_login",
    ]

    /// Calls per second and latency percentiles of one operation.
    typealias Measurement = LoadMeasurement

    let service: IdentityService
    let parameters: Parameters

    /// Runs the three measurements one after another.
    func run() async throws -> [Measurement] {
        let player = PlayerHandlers(service: service)
        let applications = ApplicationStore(database: service.pool)
        let publisher = try await applications.createPublisher(name: "Benchmark")
        guard let publisherID = RaveID(publisher.publisherId) else { throw RPCError.internalError("bad publisher") }
        let appID = try await applications.createApplication(
            publisherID: publisherID, name: "Benchmark", settings: .init(crossAppLogin: false)
        ).id.hex
        // Cross-app login is on by default, and a new device then also looks for the player in the publisher's
        // other apps: a dearer statement, measured on its own.
        let crossAppID = try await applications.createApplication(
            publisherID: publisherID, name: "Benchmark (cross-app)", settings: .init(crossAppLogin: true)
        ).id.hex
        let anonymous = Self.context(caller: nil)

        var measurements: [Measurement] = []
        for (name, app) in [("guest_login_new_device", appID), ("guest_login_new_device_cross_app", crossAppID)]
        where parameters.operations.contains(name) {
            measurements.append(
                try await measure(name) { worker, iteration in
                    _ = try await player.guestLogin(
                        .init(
                            appId: app, device: .init(deviceId: "bench-\(worker)-\(iteration)-\(UUID().uuidString)")),
                        context: anonymous)
                })
        }
        if parameters.operations.contains("refresh_session") {
            measurements.append(try await measureRefreshes(player: player, appID: appID))
        }
        if parameters.operations.contains("resolve_users_100") {
            measurements.append(try await measureResolves(player: player, appID: appID))
        }
        if parameters.operations.contains("password_login") {
            measurements.append(try await measurePasswordLogins(player: player, appID: appID))
        }
        return measurements
    }

    /// One session per worker, refreshed over and over with the token each refresh returns.
    private func measureRefreshes(player: PlayerHandlers, appID: String) async throws -> Measurement {
        let anonymous = Self.context(caller: nil)
        var tokens: [String] = []
        for worker in 0..<parameters.concurrency {
            let login = try await player.guestLogin(
                .init(appId: appID, device: .init(deviceId: "bench-refresh-\(worker)")), context: anonymous)
            guard case .tokens(let issued) = login.outcome else { throw RPCError.internalError("no tokens") }
            tokens.append(issued.refreshToken)
        }
        let latest = TokenSlots(tokens)
        return try await measure("refresh_session") { worker, _ in
            let response = try await player.refreshSession(
                .init(refreshToken: latest[worker]), context: anonymous)
            latest[worker] = response.tokens?.refreshToken ?? ""
        }
    }

    /// ResolveUsers with the same 100 ids on every call.
    private func measureResolves(player: PlayerHandlers, appID: String) async throws -> Measurement {
        let internalHandlers = InternalHandlers(service: service)
        var ids: [String] = []
        for index in 0..<100 {
            let login = try await player.guestLogin(
                .init(appId: appID, device: .init(deviceId: "bench-resolve-\(index)")),
                context: Self.context(caller: nil))
            ids.append(login.user?.profile?.userId ?? "")
        }
        let serviceContext = Self.context(caller: nil, service: true)
        let resolveIDs = ids
        return try await measure("resolve_users_100") { _, _ in
            _ = try await internalHandlers.resolveUsers(.init(userIds: resolveIDs), context: serviceContext)
        }
    }

    /// One password account per worker, logged in to over and over: bound by scrypt (the service's hasher
    /// parameters, `PasswordHasher.Parameters.default` unless configured otherwise), one hash per login.
    private func measurePasswordLogins(player: PlayerHandlers, appID: String) async throws -> Measurement {
        let anonymous = Self.context(caller: nil)
        let run = UUID().uuidString.prefix(8).lowercased()
        let password = "correct horse battery staple"
        for worker in 0..<parameters.concurrency {
            _ = try await player.signUp(
                .init(
                    appId: appID, device: .init(deviceId: "bench-password-\(worker)"),
                    email: "bench-\(run)-\(worker)@example.com", password: password, birthYear: 1990,
                    country: "FR"),
                context: anonymous)
        }
        return try await measure("password_login") { worker, _ in
            _ = try await player.loginWithPassword(
                .init(
                    appId: appID, device: .init(deviceId: "bench-password-\(worker)"),
                    email: "bench-\(run)-\(worker)@example.com", password: password),
                context: anonymous)
        }
    }

    /// Runs `operation` from `concurrency` workers for `seconds`.
    private func measure(
        _ name: String, _ operation: @escaping @Sendable (Int, Int) async throws -> Void
    ) async throws -> Measurement {
        await ClosedLoopLoad.measure(
            name, concurrency: parameters.concurrency, seconds: parameters.seconds, operation)
    }

    /// A human summary, one line per operation.
    static func summary(_ measurements: [Measurement], parameters: Parameters) -> String {
        measurements.map { $0.summaryLine(concurrency: parameters.concurrency) }.joined(separator: "\n")
    }

    /// The machine-readable results `make bench` collects.
    static func json(_ measurements: [Measurement], parameters: Parameters) -> String {
        let entries = measurements.map(\.jsonObject)
        return "{\"benchmark\":\"identity\",\"mode\":\"in-process handlers, real PostgreSQL\","
            + "\"parameters\":{\"seconds\":\(parameters.seconds),\"concurrency\":\(parameters.concurrency)},"
            + "\"results\":[\(entries.joined(separator: ","))]}\n"
    }

    static func context(caller: Caller?, service: Bool = false) -> RequestContext {
        RequestContext(
            requestID: "bench", method: "bench", deadline: UInt64.max, metadata: [:],
            peer: PeerIdentity(address: "127.0.0.1:0", certificateCommonName: service ? "bench" : nil),
            caller: caller, logger: Logger(label: "identity-bench", level: .error))
    }
}

/// The latest refresh token of each benchmark worker (each worker touches only its own slot).
private final class TokenSlots: Sendable {
    private let slots: Mutex<[String]>

    init(_ tokens: [String]) {
        slots = Mutex(tokens)
    }

    subscript(worker: Int) -> String {
        get { slots.withLock { $0[worker] } }
        set { slots.withLock { $0[worker] = newValue } }
    }
}
