import RaveRPC
import RaveTelemetry
import Synchronization

/// Records the RPC server's calls as metrics: a request counter and a latency histogram per method and status,
/// plus gauges for calls in flight and open connections.
///
/// Series are looked up once per (method, status) and cached, so the hot path is a dictionary lookup under a
/// short lock plus atomic or lock-protected increments. The RPC server passes method names from a closed set (the
/// methods it serves or routes, and `RPCServerConfiguration.unknownMethodLabel` for everything else), so the
/// series are bounded by the protocol's methods and status codes, whatever clients send.
public final class RPCMetrics: RPCServerObserver {
    private let registry: MetricsRegistry
    private let series = Mutex<[SeriesKey: (requests: Counter, duration: Histogram)]>([:])
    private let connections: Gauge
    private let inFlight: Gauge

    /// Distinct (method, status) pairs kept, a safety net behind the server's closed label set: beyond it calls
    /// are counted under the unknown method label, and nothing more is cached.
    static let maxSeries = 4000

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
        // A method nobody serves is the client's choice, not ours: one label for all of them.
        let label = code == .unimplemented ? RPCServerConfiguration.unknownMethodLabel : method
        var key = SeriesKey(method: label, code: code.rawValue)
        if let cached = series.withLock({ $0[key] }) { return cached }
        return series.withLock { series in
            if let cached = series[key] { return cached }
            if series.count >= Self.maxSeries {
                key.method = RPCServerConfiguration.unknownMethodLabel
                if let cached = series[key] { return cached }
            }
            let labels = [("rpc.method", key.method), ("rpc.status", Self.statusName(code))]
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
