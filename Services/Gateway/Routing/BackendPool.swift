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
    private let healthy = Atomic<Bool>(true)

    init(address: SocketAddress, client: RPCClient, loopConnections: LoopConnections? = nil) {
        self.address = address
        self.client = client
        self.loopConnections = loopConnections
    }

    /// False after a failed health check or an UNAVAILABLE call, until a health check succeeds.
    var isHealthy: Bool { healthy.load(ordering: .relaxed) }

    func markHealthy(_ value: Bool) {
        healthy.store(value, ordering: .relaxed)
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
            await latch.sleep(for: interval)
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
