import RaveMessages
import RaveRPC
import RaveRuntime
import RaveTelemetry
import RaveTransport
import Synchronization

/// One backend address of a service and the connections to it.
final class Backend: Sendable {
    /// The address connected to: the configured one, or one address its DNS name resolved to.
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

    /// Closes every connection to this backend.
    func close() {
        client.close()
        loopConnections?.close()
    }
}

/// The backends of one service, used round robin, healthy ones first.
///
/// The members change when a backend's DNS name resolves to other addresses (`BackendDirectory`); indices handed
/// out by `choose` refer to the snapshot of that moment, so after a change an exclusion may miss, which costs at
/// most one more attempt on a backend already tried.
final class BackendPool: Sendable {
    let service: String
    private let members: Mutex<[Backend]>
    private let next = Atomic<Int>(0)

    init(service: String, backends: [Backend]) {
        self.service = service
        members = Mutex(backends)
    }

    /// The current members.
    var backends: [Backend] { members.withLock { $0 } }

    /// Replaces the members (what DNS now says a service's name stands for).
    func replaceBackends(with backends: [Backend]) {
        members.withLock { $0 = backends }
    }

    /// The next healthy backend not in `excluded` (indices into `backends`), round robin.
    ///
    /// Nil when none is healthy: a service that is down fails at once instead of every call waiting out the
    /// reconnect backoff; the health check brings a backend back within one interval of its recovery.
    func choose(excluding excluded: Set<Int> = []) -> (index: Int, backend: Backend)? {
        choose(preferring: nil, excluding: excluded)
    }

    /// The backend for a call of `board` (its owner when known and healthy), else the next healthy one.
    ///
    /// With one member the owner cannot change the choice, so neither the board (a scan of the request) nor its
    /// owner (a lock, a hash and a clock read) is looked up.
    func choose(for board: @autoclosure () -> BoardRouting?) -> (index: Int, backend: Backend)? {
        let backends = self.backends
        if backends.count == 1 { return backends[0].isHealthy ? (0, backends[0]) : nil }
        return choose(preferring: board()?.owner, excluding: [])
    }

    /// `preferred` when it is one of this pool's backends, healthy and not excluded, else the next healthy one.
    func choose(
        preferring preferred: SocketAddress?, excluding excluded: Set<Int> = []
    ) -> (index: Int, backend: Backend)? {
        let backends = self.backends
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
