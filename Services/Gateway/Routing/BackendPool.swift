import RaveMessages
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport
import Synchronization

/// One backend address of a service and the connections to it.
final class Backend: Sendable {
    let address: SocketAddress
    let client: RPCClient
    /// Connections per event loop for single calls proxied on the client's loop; nil in pools built by hand.
    let loopConnections: LoopConnections?
    /// 0: not checked yet (calls are tried), 1: the last check or call succeeded, 2: it failed.
    private let health = Atomic<UInt8>(0)

    init(address: SocketAddress, client: RPCClient, loopConnections: LoopConnections? = nil) {
        self.address = address
        self.client = client
        self.loopConnections = loopConnections
    }

    /// False after a failed health check or an UNAVAILABLE call, until a health check succeeds.
    var isHealthy: Bool { health.load(ordering: .relaxed) != 2 }

    /// True once a health check succeeded (and none failed since): what readiness waits for.
    var isKnownHealthy: Bool { health.load(ordering: .relaxed) == 1 }

    func markHealthy(_ value: Bool) {
        health.store(value ? 1 : 2, ordering: .relaxed)
    }
}

/// The backends of one service, used round robin, healthy ones first.
final class BackendPool: Sendable {
    let service: String
    let backends: [Backend]
    private let next = Atomic<Int>(0)

    init(service: String, backends: [Backend]) {
        self.service = service
        self.backends = backends
    }

    /// The next healthy backend not in `excluded` (indices into `backends`), round robin.
    ///
    /// Nil when none is healthy: a service that is down fails at once instead of every call waiting out the
    /// reconnect backoff; the health check brings a backend back within one interval of its recovery.
    func choose(excluding excluded: Set<Int> = []) -> (index: Int, backend: Backend)? {
        choose(preferring: nil, excluding: excluded)
    }

    /// `preferred` when it is one of this pool's backends, healthy and not excluded, else the next healthy one.
    func choose(
        preferring preferred: SocketAddress?, excluding excluded: Set<Int> = []
    ) -> (index: Int, backend: Backend)? {
        if let preferred, let index = backends.firstIndex(where: { $0.address == preferred }),
            !excluded.contains(index) && backends[index].isHealthy
        {
            return (index, backends[index])
        }
        let start = next.wrappingAdd(1, ordering: .relaxed).oldValue
        for offset in 0..<backends.count {
            let index = (start &+ offset) % backends.count
            if !excluded.contains(index) && backends[index].isHealthy { return (index, backends[index]) }
        }
        return nil
    }
}

/// Every service's pool, and the health checker that keeps their health flags current.
final class BackendDirectory: Service {
    let name = "backend-health"
    let pools: [String: BackendPool]
    private let interval: Duration
    private let logger: Logger
    private let latch = ShutdownLatch()
    /// How often backends that are down are probed.
    static let recoveryProbeInterval: Duration = .milliseconds(200)

    init(
        backends: [String: [SocketAddress]], tls: TLSContext, group: EventLoopGroup, connectionsPerBackend: Int,
        healthCheckInterval: Duration, logger: Logger
    ) {
        var configuration = RPCClient.Configuration()
        configuration.connectionCount = connectionsPerBackend
        configuration.maximumBackoff = .seconds(2)
        var pools: [String: BackendPool] = [:]
        for (service, addresses) in backends {
            pools[service] = BackendPool(
                service: service,
                backends: addresses.map { address in
                    let logger = logger.with("backend", "\(service)@\(address)")
                    return Backend(
                        address: address,
                        client: RPCClient(
                            host: address.host, port: address.port, tls: tls, group: group,
                            configuration: configuration, logger: logger),
                        loopConnections: LoopConnections(
                            host: address.host, port: address.port, tls: tls, group: group, logger: logger))
                })
        }
        self.pools = pools
        self.interval = healthCheckInterval
        self.logger = logger
    }

    /// The services without a backend that passed its last health check; `/readyz` waits until it is empty.
    var servicesWithoutHealthyBackend: [String] {
        pools.values.filter { !$0.backends.contains(where: \.isKnownHealthy) }.map(\.service).sorted()
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
        while !latch.isOpen {
            await checkHealth()
            // While a backend is down it is probed more often, so a restart is noticed within a fraction of
            // a second; healthy backends are checked at the configured interval.
            let allHealthy = pools.values.allSatisfy { $0.backends.allSatisfy(\.isKnownHealthy) }
            await latch.sleep(for: allHealthy ? interval : min(interval, Self.recoveryProbeInterval))
        }
        for pool in pools.values {
            for backend in pool.backends {
                backend.client.close()
                backend.loopConnections?.close()
            }
        }
    }

    func shutdown() async {
        latch.open()
    }
}
