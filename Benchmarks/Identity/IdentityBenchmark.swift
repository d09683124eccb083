import BenchmarkSupport
import Foundation
import Identity
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTelemetry
import RaveTransport
import Synchronization

/// Throughput of identity's hot paths, called in-process against a real PostgreSQL (no RPC in the path): guest
/// logins of new devices, token refreshes, ResolveUsers with 100 ids, password logins, and guest logins and
/// refreshes while password logins flood the service at ten times its hashing capacity.
///
/// `rave-bench identity` runs it against `RAVE_DATABASE_URL` (a scratch database: it is migrated and filled), prints a
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
        /// Run every call on an event loop of `loops`, as the server does with `RAVE_HANDLERS_ON_EVENT_LOOP=true`
        /// (empty: on Swift's cooperative pool, as identity's server does by default).
        var loops: [EventLoop] = []
        /// The password flood's rate, as a multiple of the password logins measured (or estimated) per second.
        var floodMultiple: Double = 10
        /// The flood's rate never exceeds this (with test-strength hashes the capacity is in the thousands).
        var maximumFloodRate: Double = 2000
        /// Where the flood's hashes run: `pool` (the service's hashing threads, as in production) or `cooperative`
        /// (verified on the calling task, unbounded: where hashes ran before the hashing pool, for comparison).
        var floodHashing = "pool"
    }

    /// The operations, in the order they run.
    static let operationNames: Set<String> = [
        "guest_login_new_device", "guest_login_new_device_cross_app", "refresh_session", "resolve_users_100",
        "password_login", "password_flood",
    ]

    /// Calls per second and latency percentiles of one operation.
    typealias Measurement = LoadMeasurement

    /// What one run measured.
    struct Results: Sendable {
        var measurements: [Measurement] = []
        /// The password flood's own counts, when `password_flood` ran.
        var flood: PasswordFlood.Outcome?
    }

    let service: IdentityDependencies
    let parameters: Parameters

    /// Runs the measurements one after another.
    func run() async throws -> Results {
        let player = service.playerHandler
        let publisherID = try await service.createPublisher(name: "Benchmark")
        let appID = try await service.createApplication(
            publisherID: publisherID, name: "Benchmark", crossAppLogin: false
        ).hex
        // Cross-app login is on by default, and a new device then also looks for the player in the publisher's
        // other apps: a dearer statement, measured on its own.
        let crossAppID = try await service.createApplication(
            publisherID: publisherID, name: "Benchmark (cross-app)", crossAppLogin: true
        ).hex
        var results = Results()
        for (name, app) in [("guest_login_new_device", appID), ("guest_login_new_device_cross_app", crossAppID)]
        where parameters.operations.contains(name) {
            results.measurements.append(try await measureGuestLogins(name, player: player, appID: app))
        }
        if parameters.operations.contains("refresh_session") {
            results.measurements.append(try await measureRefreshes(player: player, appID: appID))
        }
        if parameters.operations.contains("resolve_users_100") {
            results.measurements.append(try await measureResolves(player: player, appID: appID))
        }
        if parameters.operations.contains("password_login") {
            results.measurements.append(try await measurePasswordLogins(player: player, appID: appID))
        }
        if parameters.operations.contains("password_flood") {
            let (measurements, outcome) = try await measureUnderFlood(player: player, appID: appID)
            results.measurements += measurements
            results.flood = outcome
        }
        return results
    }

    private func measureGuestLogins(
        _ name: String, player: any IdentityV1.IdentityHandler, appID: String
    ) async throws -> Measurement {
        let anonymous = Self.context(caller: nil)
        return try await measure(name) { worker, iteration in
            _ = try await player.guestLogin(
                .init(appId: appID, device: .init(deviceId: "bench-\(worker)-\(iteration)-\(UUID().uuidString)")),
                context: anonymous)
        }
    }

    /// Guest logins and refreshes without, then with, a flood of password logins at `floodMultiple` times the
    /// hashing capacity.
    ///
    /// The capacity is the hashers' nominal one: hashers per the time of one hash run at normal priority on an
    /// otherwise idle core (the fastest of three). Measured password logins are lower on a busy machine, where the
    /// hashing threads' low priority leaves them little CPU, and a flood scaled to that would be no flood.
    private func measureUnderFlood(
        player: any IdentityV1.IdentityHandler, appID: String
    ) async throws -> ([Measurement], PasswordFlood.Outcome) {
        var fastest = Duration.seconds(60)
        for _ in 0..<3 {
            let start = ContinuousClock.now
            try service.hashDecoyPassword()
            fastest = min(fastest, ContinuousClock.now - start)
        }
        let capacity = Double(service.passwordHashingThreads) / (Double(fastest / .microseconds(1)) / 1e6)
        // Sessions for both rounds first: during the flood only the measured calls run.
        let sessions = [
            try await refreshSessions(player: player, appID: appID, round: 0),
            try await refreshSessions(player: player, appID: appID, round: 1),
        ]
        var measurements: [Measurement] = []
        for (round, suffix) in ["baseline", "during_flood"].enumerated() {
            let flood =
                round == 0
                ? nil
                : PasswordFlood(
                    service: service, player: player,
                    rate: min(parameters.maximumFloodRate, parameters.floodMultiple * capacity),
                    cooperative: parameters.floodHashing == "cooperative", loops: parameters.loops, appID: appID)
            flood?.start()
            measurements.append(try await measureGuestLogins("guest_login_\(suffix)", player: player, appID: appID))
            measurements.append(
                try await measureRefreshes("refresh_session_\(suffix)", player: player, sessions: sessions[round]))
            if let outcome = await flood?.stop() { return (measurements, outcome) }
        }
        preconditionFailure("the flood round always runs")
    }

    /// One session per worker, refreshed over and over with the token each refresh returns.
    private func measureRefreshes(player: any IdentityV1.IdentityHandler, appID: String) async throws -> Measurement {
        try await measureRefreshes(
            "refresh_session", player: player, sessions: try await refreshSessions(player: player, appID: appID))
    }

    /// A new session per worker; its refresh token in the worker's slot.
    private func refreshSessions(
        player: any IdentityV1.IdentityHandler, appID: String, round: Int = 0
    ) async throws -> TokenSlots {
        var tokens: [String] = []
        for worker in 0..<parameters.concurrency {
            let login = try await player.guestLogin(
                .init(appId: appID, device: .init(deviceId: "bench-refresh-\(round)-\(worker)")),
                context: Self.context(caller: nil))
            guard case .tokens(let issued) = login.outcome else { throw RPCError.internalError("no tokens") }
            tokens.append(issued.refreshToken)
        }
        return TokenSlots(tokens)
    }

    private func measureRefreshes(
        _ name: String, player: any IdentityV1.IdentityHandler, sessions: TokenSlots
    ) async throws
        -> Measurement
    {
        let anonymous = Self.context(caller: nil)
        return try await measure(name) { worker, _ in
            let response = try await player.refreshSession(
                .init(refreshToken: sessions[worker]), context: anonymous)
            sessions[worker] = response.tokens?.refreshToken ?? ""
        }
    }

    /// ResolveUsers with the same 100 ids on every call.
    private func measureResolves(player: any IdentityV1.IdentityHandler, appID: String) async throws -> Measurement {
        let internalHandlers = service.internalHandler
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

    /// Password logins at the hashing pool's capacity.
    ///
    /// One password account per worker, logged in to over and over: bound by scrypt (the service's hasher
    /// parameters, `PasswordHasher.Parameters.default` unless configured otherwise), one hash per login. As many
    /// workers as the hashing pool has slots (at most `concurrency`), so none is refused.
    private func measurePasswordLogins(
        player: any IdentityV1.IdentityHandler, appID: String
    ) async throws -> Measurement {
        let anonymous = Self.context(caller: nil)
        let run = UUID().uuidString.prefix(8).lowercased()
        let password = "correct horse battery staple"
        let workers = min(parameters.concurrency, service.passwordHashingThreads + service.passwordQueueLimit)
        for worker in 0..<workers {
            _ = try await player.signUp(
                .init(
                    appId: appID, device: .init(deviceId: "bench-password-\(worker)"),
                    email: "bench-\(run)-\(worker)@example.com", password: password, birthYear: 1990,
                    country: "FR"),
                context: anonymous)
        }
        return try await measure("password_login", concurrency: workers) { worker, _ in
            _ = try await player.loginWithPassword(
                .init(
                    appId: appID, device: .init(deviceId: "bench-password-\(worker)"),
                    email: "bench-\(run)-\(worker)@example.com", password: password),
                context: anonymous)
        }
    }

    /// Runs `operation` from `concurrency` workers (default: the parameters') for `seconds`, on the event loops
    /// when `loops` names some.
    private func measure(
        _ name: String, concurrency: Int? = nil, _ operation: @escaping @Sendable (Int, Int) async throws -> Void
    ) async throws -> Measurement {
        let loops = parameters.loops
        return await ClosedLoopLoad.measure(
            name, concurrency: concurrency ?? parameters.concurrency, seconds: parameters.seconds
        ) { worker, iteration in
            try await Self.onLoop(of: loops, index: worker) { try await operation(worker, iteration) }
        }
    }

    /// Runs `body` on loop `index % loops.count`, or where it is when `loops` is empty.
    static func onLoop(
        of loops: [EventLoop], index: Int, _ body: @Sendable () async throws -> Void
    ) async throws {
        guard !loops.isEmpty else { return try await body() }
        try await withTaskExecutorPreference(loops[index % loops.count], operation: body)
    }

    /// A human summary, one line per operation.
    static func summary(_ results: Results, parameters: Parameters) -> String {
        var lines = results.measurements.map { $0.summaryLine(concurrency: parameters.concurrency) }
        if let flood = results.flood { lines.append(flood.summaryLine) }
        return lines.joined(separator: "\n")
    }

    /// The machine-readable results `make bench` collects.
    static func json(_ results: Results, parameters: Parameters) -> String {
        let entries = results.measurements.map(\.jsonObject)
        let flood = results.flood.map { ",\"password_flood\":\($0.jsonObject)" } ?? ""
        return "{\"benchmark\":\"identity\",\"mode\":\"in-process handlers, real PostgreSQL\","
            + "\"parameters\":{\"seconds\":\(parameters.seconds),\"concurrency\":\(parameters.concurrency),"
            + "\"handlers_on_event_loop\":\(!parameters.loops.isEmpty)},"
            + "\"results\":[\(entries.joined(separator: ","))]\(flood)}\n"
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
