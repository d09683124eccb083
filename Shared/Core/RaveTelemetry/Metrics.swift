import Synchronization

/// Counters, gauges and histograms of one process, exposed in the Prometheus text format.
///
/// Registering a series takes the registry's lock and may allocate; recording to it does not. Callers on hot
/// paths look a labelled series up once and keep it (see `RPCMetrics` in RaveRuntime for a per-method cache).
/// Names may be written in the OpenTelemetry style (`rpc.server.duration`, label `rpc.method`): the registry
/// exposes them with Prometheus-safe names (`rpc_server_duration`, `rpc_method`).
public final class MetricsRegistry: Sendable {
    /// The registry the process exposes on its admin port.
    public static let shared = MetricsRegistry()

    private let state = Mutex(RegistryState())

    private struct RegistryState {
        var families: [String: MetricFamily] = [:]
        /// Registration order, so the exposition is stable and reads like the code that declared it.
        var order: [String] = []
    }

    public init() {}

    /// The counter series `name{labels}`, created on first use.
    public func counter(_ name: String, help: String, labels: [(String, String)] = []) -> Counter {
        let series = series(name, help: help, kind: .counter, labels: labels) { .counter(Counter()) }
        guard case .counter(let counter) = series else { preconditionFailure("\(name)\(labels) is a computed counter") }
        return counter
    }

    /// A counter whose value is read from `read` at every scrape (a count another component keeps).
    ///
    /// `read` runs on the scraping thread while the registry is not locked; keep it cheap and non-blocking.
    public func counter(
        _ name: String, help: String, labels: [(String, String)] = [], read: @escaping @Sendable () -> Double
    ) {
        _ = series(name, help: help, kind: .counter, labels: labels) { .computed(read) }
    }

    /// The gauge series `name{labels}`, created on first use.
    public func gauge(_ name: String, help: String, labels: [(String, String)] = []) -> Gauge {
        let series = series(name, help: help, kind: .gauge, labels: labels) { .gauge(Gauge()) }
        guard case .gauge(let gauge) = series else { preconditionFailure("\(name)\(labels) is a computed gauge") }
        return gauge
    }

    /// A gauge whose value is read from `read` at every scrape (pool sizes, queue depths).
    ///
    /// `read` runs on the scraping thread while the registry is not locked; keep it cheap and non-blocking.
    public func gauge(
        _ name: String, help: String, labels: [(String, String)] = [], read: @escaping @Sendable () -> Double
    ) {
        _ = series(name, help: help, kind: .gauge, labels: labels) { .computed(read) }
    }

    /// The histogram series `name{labels}` with `buckets` (upper bounds), created on first use.
    ///
    /// Every series of one histogram family must use the same buckets; the first registration decides them.
    public func histogram(
        _ name: String, help: String, labels: [(String, String)] = [],
        buckets: [Double] = Histogram.latencyBuckets
    ) -> Histogram {
        let series = series(name, help: help, kind: .histogram, labels: labels) {
            .histogram(Histogram(buckets: buckets))
        }
        guard case .histogram(let histogram) = series else { preconditionFailure("\(name) is not a histogram") }
        return histogram
    }

    private func series(
        _ name: String, help: String, kind: MetricKind, labels: [(String, String)], make: () -> MetricSeries
    ) -> MetricSeries {
        let exposedName = Self.prometheusName(name)
        let exposedLabels = labels.map { (Self.prometheusName($0.0), $0.1) }
        let key = exposedLabels.map { "\($0.0)=\($0.1)" }.joined(separator: "\u{0}")
        return state.withLock { state in
            var family = state.families[exposedName] ?? MetricFamily(name: exposedName, help: help, kind: kind)
            precondition(family.kind == kind, "metric \(exposedName) registered as \(family.kind) and \(kind)")
            if let existing = family.series[key] { return existing.value }
            let created = make()
            family.series[key] = (exposedLabels, created)
            family.seriesOrder.append(key)
            if state.families[exposedName] == nil { state.order.append(exposedName) }
            state.families[exposedName] = family
            return created
        }
    }

    // MARK: - Exposition

    /// Every series in the Prometheus text exposition format, version 0.0.4.
    public func exposition() -> String {
        let snapshot = state.withLock { state in state.order.compactMap { state.families[$0] } }
        var text = ""
        for family in snapshot {
            text += "# HELP \(family.name) \(Self.escapedHelp(family.help))\n"
            text += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            for key in family.seriesOrder {
                guard let (labels, series) = family.series[key] else { continue }
                series.write(name: family.name, labels: labels, to: &text)
            }
        }
        return text
    }

    /// The content type of `exposition()`.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Replaces every character Prometheus does not allow in a metric or label name with `_`.
    public static func prometheusName(_ name: String) -> String {
        var result = ""
        for (index, scalar) in name.unicodeScalars.enumerated() {
            let isLetter = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || scalar == "_"
            let isDigit = scalar >= "0" && scalar <= "9"
            if isLetter || (isDigit && index > 0) {
                result.unicodeScalars.append(scalar)
            } else {
                result += "_"
            }
        }
        return result.isEmpty ? "_" : result
    }

    static func escapedHelp(_ help: String) -> String {
        help.replacing("\\", with: "\\\\").replacing("\n", with: "\\n")
    }

    static func escapedLabelValue(_ value: String) -> String {
        value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n")
    }

    static func labelText(_ labels: [(String, String)], extra: (String, String)? = nil) -> String {
        let all = extra.map { labels + [$0] } ?? labels
        guard !all.isEmpty else { return "" }
        return "{" + all.map { "\($0.0)=\"\(escapedLabelValue($0.1))\"" }.joined(separator: ",") + "}"
    }

    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

// MARK: - Series types

/// A value that only goes up (requests served, errors seen).
public final class Counter: Sendable {
    private let count = Atomic<UInt64>(0)

    init() {}

    public func increment(by amount: UInt64 = 1) {
        count.wrappingAdd(amount, ordering: .relaxed)
    }

    public var value: UInt64 { count.load(ordering: .relaxed) }
}

/// A value that goes up and down (requests in flight, open connections).
public final class Gauge: Sendable {
    /// The Double's bit pattern, so updates are lock-free compare-and-swap loops.
    private let bits = Atomic<UInt64>(0.0.bitPattern)

    init() {}

    public func set(_ value: Double) {
        bits.store(value.bitPattern, ordering: .relaxed)
    }

    public func increment(by amount: Double = 1) {
        var current = bits.load(ordering: .relaxed)
        while true {
            let next = (Double(bitPattern: current) + amount).bitPattern
            let (exchanged, original) = bits.weakCompareExchange(
                expected: current, desired: next, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    public func decrement(by amount: Double = 1) {
        increment(by: -amount)
    }

    public var value: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }
}

/// Observations counted into fixed buckets (latencies in seconds, sizes in bytes).
public final class Histogram: Sendable {
    /// Upper bounds suited to RPC latency in seconds: 100 µs to 10 s.
    public static let latencyBuckets: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    /// Sorted upper bounds, without +Inf.
    public let buckets: [Double]
    private let state: Mutex<State>

    struct State {
        /// Per bucket (not cumulative); the last slot counts observations above every bound.
        var counts: [UInt64]
        var sum: Double = 0
    }

    init(buckets: [Double]) {
        self.buckets = buckets.sorted().filter { $0.isFinite }
        state = Mutex(State(counts: Array(repeating: 0, count: self.buckets.count + 1)))
    }

    /// Records one observation.
    public func observe(_ value: Double) {
        // Linear search: with ~16 bounds it beats a binary search's branch mispredictions.
        var index = 0
        while index < buckets.count, value > buckets[index] { index += 1 }
        state.withLock { state in
            state.counts[index] &+= 1
            state.sum += value
        }
    }

    /// Records a duration in seconds.
    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) * 1e-18)
    }

    /// Records a duration given in nanoseconds, in seconds.
    public func observe(nanoseconds: UInt64) {
        observe(Double(nanoseconds) * 1e-9)
    }

    /// The number of observations and their sum.
    public var totals: (count: UInt64, sum: Double) {
        state.withLock { state in (state.counts.reduce(0, &+), state.sum) }
    }

    func snapshot() -> State { state.withLock { $0 } }
}

// MARK: - Families

enum MetricKind: String, Sendable {
    case counter, gauge, histogram
}

enum MetricSeries: Sendable {
    case counter(Counter)
    case gauge(Gauge)
    /// A gauge or counter whose value is read at scrape time.
    case computed(@Sendable () -> Double)
    case histogram(Histogram)

    func write(name: String, labels: [(String, String)], to text: inout String) {
        switch self {
        case .counter(let counter):
            text += "\(name)\(MetricsRegistry.labelText(labels)) \(counter.value)\n"
        case .gauge(let gauge):
            text += "\(name)\(MetricsRegistry.labelText(labels)) \(MetricsRegistry.number(gauge.value))\n"
        case .computed(let read):
            text += "\(name)\(MetricsRegistry.labelText(labels)) \(MetricsRegistry.number(read()))\n"
        case .histogram(let histogram):
            let state = histogram.snapshot()
            var cumulative: UInt64 = 0
            for (index, bound) in histogram.buckets.enumerated() {
                cumulative &+= state.counts[index]
                let le = MetricsRegistry.labelText(labels, extra: ("le", MetricsRegistry.number(bound, bucket: true)))
                text += "\(name)_bucket\(le) \(cumulative)\n"
            }
            cumulative &+= state.counts[histogram.buckets.count]
            text += "\(name)_bucket\(MetricsRegistry.labelText(labels, extra: ("le", "+Inf"))) \(cumulative)\n"
            text += "\(name)_sum\(MetricsRegistry.labelText(labels)) \(MetricsRegistry.number(state.sum))\n"
            text += "\(name)_count\(MetricsRegistry.labelText(labels)) \(cumulative)\n"
        }
    }
}

struct MetricFamily: Sendable {
    let name: String
    let help: String
    let kind: MetricKind
    var series: [String: (labels: [(String, String)], value: MetricSeries)] = [:]
    var seriesOrder: [String] = []

    init(name: String, help: String, kind: MetricKind) {
        self.name = name
        self.help = help
        self.kind = kind
    }
}

extension MetricsRegistry {
    /// Bucket bounds keep their fractional form (`1.0`, not `1`), as Prometheus client libraries print them.
    static func number(_ value: Double, bucket: Bool) -> String {
        bucket ? "\(value)" : number(value)
    }
}
