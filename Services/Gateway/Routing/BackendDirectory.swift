import RaveMessages
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport
import Synchronization

/// Every service's pool, the health checker that keeps their health flags current, and the resolver that keeps
/// DNS-named backends current.
///
/// A backend configured by DNS name (a Kubernetes headless Service, say) stands for every address the name
/// resolves to, each one a backend of its own: connections spread over all of them, each has its own health, and
/// a leaderboards replica is found by the address it advertises as a board's owner (DESIGN.md §8). Names are
/// resolved again every health-check interval, so replicas that come and go join and leave the pool. A name
/// that cannot be resolved keeps the backends it had; before its first resolution it is one backend that
/// resolves the name at each connect. TLS still verifies the certificate against the configured name.
final class BackendDirectory: Service {
    let name = "backend-health"
    let pools: [String: BackendPool]
    private let configured: [String: [SocketAddress]]
    private let factory: BackendFactory
    private let resolve: @Sendable (String) async throws -> [String]
    private let interval: Duration
    private let logger: Logger
    private let latch = ShutdownLatch()
    private let retired = Mutex<[(backend: Backend, closeAt: ContinuousClock.Instant)]>([])
    /// How often backends that are down are probed.
    static let recoveryProbeInterval: Duration = .milliseconds(200)
    /// How long a backend that left its pool keeps its connections, so calls under way on it can finish.
    static let retirementGrace: Duration = .seconds(30)

    /// `resolve` turns a host name into numeric addresses (`NameResolver` unless a test stands in for DNS).
    init(
        backends: [String: [SocketAddress]], tls: TLSContext, group: EventLoopGroup, connectionsPerBackend: Int,
        healthCheckInterval: Duration, reconnectBackoff: Duration = .seconds(2), logger: Logger,
        resolve: @escaping @Sendable (String) async throws -> [String] = { try await NameResolver.addresses(of: $0) }
    ) {
        var configuration = RPCClient.Configuration()
        configuration.connectionCount = connectionsPerBackend
        configuration.maximumBackoff = reconnectBackoff
        configuration.initialBackoff = min(configuration.initialBackoff, reconnectBackoff)
        let factory = BackendFactory(tls: tls, group: group, configuration: configuration, logger: logger)
        var pools: [String: BackendPool] = [:]
        for (service, addresses) in backends {
            pools[service] = BackendPool(
                service: service, backends: addresses.map { factory.make(service: service, address: $0) })
        }
        self.pools = pools
        self.configured = backends
        self.factory = factory
        self.resolve = resolve
        self.interval = healthCheckInterval
        self.logger = logger
    }

    /// The services without a backend that passed its last health check; `/readyz` waits until it is empty.
    var servicesWithoutHealthyBackend: [String] {
        pools.values.filter { !$0.backends.contains(where: \.isKnownHealthy) }.map(\.service).sorted()
    }

    /// Resolves every configured DNS name again and updates the pools whose addresses changed.
    func resolveNames() async {
        for (service, addresses) in configured where addresses.contains(where: { !NameResolver.isNumeric($0.host) }) {
            guard let pool = pools[service] else { continue }
            var wanted: [(address: SocketAddress, serverName: String?)] = []
            do {
                for configured in addresses {
                    if NameResolver.isNumeric(configured.host) {
                        wanted.append((configured, nil))
                        continue
                    }
                    for host in try await resolve(configured.host) {
                        wanted.append((SocketAddress(host: host, port: configured.port), configured.host))
                    }
                }
            } catch {
                logger.warning(
                    "resolving backends failed; keeping the ones known", [("service", service), ("error", "\(error)")])
                continue
            }
            update(pool, to: wanted)
        }
        closeRetiredBackends(before: .now)
    }

    private func update(_ pool: BackendPool, to wanted: [(address: SocketAddress, serverName: String?)]) {
        let current = pool.backends
        var seen: Set<SocketAddress> = []
        let members = wanted.compactMap { entry -> Backend? in
            guard seen.insert(entry.address).inserted else { return nil }
            return current.first { $0.address == entry.address }
                ?? factory.make(service: pool.service, address: entry.address, serverName: entry.serverName)
        }
        guard members.map(\.address) != current.map(\.address) else { return }
        pool.replaceBackends(with: members)
        let leaving = current.filter { backend in !members.contains { $0 === backend } }
        let closeAt = ContinuousClock.now + Self.retirementGrace
        retired.withLock { $0 += leaving.map { ($0, closeAt) } }
        logger.notice(
            "backends changed",
            [("service", pool.service), ("addresses", members.map(\.address.description).joined(separator: ","))])
    }

    private func closeRetiredBackends(before instant: ContinuousClock.Instant) {
        let due = retired.withLock { retired -> [Backend] in
            let due = retired.filter { $0.closeAt <= instant }.map(\.backend)
            retired.removeAll { $0.closeAt <= instant }
            return due
        }
        for backend in due { backend.close() }
    }

    /// Asks every backend's Health/Check once and records the answers.
    func checkHealth() async {
        await withTaskGroup(of: Void.self) { group in
            for pool in pools.values {
                for backend in pool.backends {
                    group.addTask { await self.check(backend, service: pool.service) }
                }
            }
        }
    }

    private func check(_ backend: Backend, service: String) async {
        var healthy = false
        // A backend that is down is probed with a fresh connect, not after the client's reconnect backoff, so
        // a service that starts after the gateway is used within one check interval of serving.
        if !backend.isKnownHealthy { backend.client.resetBackoff() }
        do {
            let response = try await backend.client.call(
                method: "rave.rpc.v1.Health/Check", request: RpcV1.HealthCheckRequest().protobufBytes(),
                options: CallOptions(timeout: .seconds(1), maxRetries: 0))
            healthy = (try? RpcV1.HealthCheckResponse(protobufBytes: response))?.status == .serving
        } catch {
            healthy = false
        }
        if healthy != backend.isHealthy {
            logger.notice(
                healthy ? "backend is healthy" : "backend is unhealthy",
                [("service", service), ("address", "\(backend.address)")])
        }
        backend.markHealthy(healthy)
    }

    func run() async throws {
        var resolvedAt: ContinuousClock.Instant?
        while !latch.isOpen {
            if resolvedAt.map({ $0 + interval <= .now }) ?? true {
                await resolveNames()
                resolvedAt = .now
            }
            await checkHealth()
            // While a backend is down it is probed more often, so a restart is noticed within a fraction of
            // a second; healthy backends are checked at the configured interval.
            let allHealthy = pools.values.allSatisfy { $0.backends.allSatisfy(\.isKnownHealthy) }
            await latch.sleep(for: allHealthy ? interval : min(interval, Self.recoveryProbeInterval))
        }
        for pool in pools.values {
            for backend in pool.backends { backend.close() }
        }
        closeRetiredBackends(before: .now + Self.retirementGrace)
    }

    func shutdown() async {
        latch.open()
    }
}

/// Builds a backend's connections the same way for configured and for resolved addresses.
private struct BackendFactory: Sendable {
    let tls: TLSContext
    let group: EventLoopGroup
    let configuration: RPCClient.Configuration
    let logger: Logger

    /// A backend at `address`; `serverName` is the DNS name its certificate must match when `address` is one
    /// of the name's addresses.
    func make(service: String, address: SocketAddress, serverName: String? = nil) -> Backend {
        var configuration = configuration
        configuration.serverName = serverName
        let logger = logger.with("backend", "\(service)@\(address)")
        return Backend(
            address: address,
            client: RPCClient(
                host: address.host, port: address.port, tls: tls, group: group, configuration: configuration,
                logger: logger),
            loopConnections: LoopConnections(
                host: address.host, port: address.port, serverName: serverName, tls: tls, group: group,
                logger: logger))
    }
}
