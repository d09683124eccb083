import Foundation
import RaveRPC
import RaveServices
import RaveTransport
import Synchronization

/// How a process uses `ServiceRuntime` beyond what its `ServiceConfiguration` says.
///
/// Services have a database and migrations; the gateway has no database and asks clients for a certificate
/// without requiring one (admin and service peers present theirs, players do not).
public struct RuntimeOptions: Sendable {
    /// The service's migrations, applied at start-up before anything is served.
    public var migrations: MigrationSource
    /// Whether the process has a database; without one `RAVE_DATABASE_URL` is ignored.
    public var usesDatabase: Bool
    /// Whether the TLS server asks for a client certificate even when `RAVE_TLS_CLIENT_AUTH` does not require one.
    public var requestClientCertificate: Bool

    public init(migrations: MigrationSource = .none, usesDatabase: Bool = true, requestClientCertificate: Bool = false)
    {
        self.migrations = migrations
        self.usesDatabase = usesDatabase
        self.requestClientCertificate = requestClientCertificate
    }
}

/// What a process's RPC server serves and whom it admits, returned by its setup closure.
public struct RPCServing: Sendable {
    /// The services the server routes to.
    public var services: [any RPCService]
    /// Which peers may call which service; backend services use the project's `TrustModel.backend`.
    public var access: AccessPolicy
    /// Serves methods no service has (the gateway's proxy); see `RPCServer.init`.
    public var fallback: RPCMethod.Handler?
    /// Asked first for every call but the Health check, on the connection's loop; see `RPCServer.init`.
    public var loopFallback: RPCLoopHandler?
    /// The server's settings when the process changes those `ServiceConfiguration` reads (a per-address
    /// connection limit, the fallback's method names); nil uses `ServiceConfiguration.rpcServerConfiguration`.
    public var configuration: RPCServerConfiguration?
    /// Counts the RPC port's connections together with another listener of the process (the gateway's HTTP
    /// port); nil counts them alone under the configuration's limits.
    public var admission: ConnectionAdmission?

    public init(
        services: [any RPCService], access: AccessPolicy = TrustModel.backend, fallback: RPCMethod.Handler? = nil,
        loopFallback: RPCLoopHandler? = nil, configuration: RPCServerConfiguration? = nil,
        admission: ConnectionAdmission? = nil
    ) {
        self.services = services
        self.access = access
        self.fallback = fallback
        self.loopFallback = loopFallback
        self.configuration = configuration
        self.admission = admission
    }
}

/// Ends a process whose shutdown hangs: armed when shutdown begins, it calls `expired` after `limit` unless
/// disarmed first.
///
/// It runs on a thread of its own, not a Task: a stuck process may have no cooperative thread left to run one.
public final class ShutdownWatchdog: Sendable {
    private let limit: Duration
    private let expired: @Sendable () -> Void
    private let armed = Atomic<Bool>(false)
    private let disarmed = Atomic<Bool>(false)

    /// - Parameters:
    ///   - limit: how long shutdown may take once it began.
    ///   - expired: what happens then (`RaveServiceMain` logs and exits 1).
    public init(limit: Duration, expired: @escaping @Sendable () -> Void) {
        self.limit = limit
        self.expired = expired
    }

    /// Starts the countdown; later calls do nothing.
    public func arm() {
        guard !armed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let (seconds, attoseconds) = limit.components
        let interval = Double(seconds) + Double(attoseconds) * 1e-18
        let thread = Thread { [self] in
            Thread.sleep(forTimeInterval: interval)
            if !disarmed.load(ordering: .acquiring) { expired() }
        }
        thread.name = "rave-shutdown-watchdog"
        thread.start()
    }

    /// Stops a countdown that has not expired yet (shutdown finished).
    public func disarm() {
        disarmed.store(true, ordering: .releasing)
    }
}
