import RaveRPC
import RaveTelemetry
import Synchronization

/// Records the RPC server's calls as metrics: a request counter and a latency histogram per method and status,
/// plus gauges for calls in flight and open connections.
///
/// Series are looked up once per (method, status) and cached, so the hot path is a dictionary lookup under a
/// short lock plus atomic or lock-protected increments.
public final class RPCMetrics: RPCServerObserver {
    private let registry: MetricsRegistry
    private let series = Mutex<[SeriesKey: (requests: Counter, duration: Histogram)]>([:])
    private let connections: Gauge
    private let inFlight: Gauge

    /// Distinct (method, status) pairs kept; beyond it calls are counted under method "_other", so a client
    /// sending random method names cannot grow the registry without bound.
    static let maxSeries = 2000

    private struct SeriesKey: Hashable {
        var method: String
        var code: Int32
    }

    public init(registry: MetricsRegistry = .shared) {
        self.registry = registry
        connections = registry.gauge("rpc.server.connections", help: "Open RPC connections.")
        inFlight = registry.gauge("rpc.server.active_requests", help: "RPC calls being handled.")
    }

    public func callStarted(method: String) {
        inFlight.increment()
    }

    public func callFinished(method: String, code: StatusCode, nanoseconds: UInt64) {
        inFlight.decrement()
        let (requests, duration) = seriesFor(method: method, code: code)
        requests.increment()
        duration.observe(nanoseconds: nanoseconds)
    }

    public func connectionCountChanged(to count: Int) {
        connections.set(Double(count))
    }

    private func seriesFor(method: String, code: StatusCode) -> (requests: Counter, duration: Histogram) {
        // Unknown methods are the client's choice, not ours: one bucket for all of them.
        let key = SeriesKey(method: code == .unimplemented ? "_unknown" : method, code: code.rawValue)
        if let cached = series.withLock({ $0[key] }) { return cached }
        return series.withLock { series in
            if let cached = series[key] { return cached }
            let labelMethod = series.count < Self.maxSeries ? key.method : "_other"
            let labels = [("rpc.method", labelMethod), ("rpc.status", Self.statusName(code))]
            let created = (
                registry.counter(
                    "rpc_server_requests_total", help: "RPC calls answered, by method and status.", labels: labels),
                registry.histogram(
                    "rpc.server.duration", help: "Time from request to response, in seconds.", labels: labels)
            )
            series[key] = created
            return created
        }
    }

    /// The protocol's name for a status code ("OK", "DEADLINE_EXCEEDED"), as dashboards and alerts spell it.
    public static func statusName(_ code: StatusCode) -> String {
        let names = [
            "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
            "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
            "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
        ]
        let raw = Int(code.rawValue)
        return names.indices.contains(raw) ? names[raw] : "CODE_\(raw)"
    }
}
