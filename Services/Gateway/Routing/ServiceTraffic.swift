import RaveRPC
import RaveTelemetry
import Synchronization

/// The calls this gateway forwarded to each backend service over the last minute: counts, service errors and a
/// latency histogram per second, for `GatewayAdmin/GetSystemStatus` (docs/gateway.md, "System status").
///
/// Recorded once per forwarded call, on whichever path answered it (`CallPipeline.dispatch`, `ProxiedCall`): one
/// short lock of the service's own window, no allocation. Times are monotonic nanoseconds, passed in, so tests
/// choose them.
final class ServiceTraffic: Sendable {
    /// The seconds a status covers.
    static let windowSeconds = 60
    /// Latency bucket upper bounds in seconds (the gateway's `rpc.server.duration` buckets); one more bucket
    /// counts what is slower.
    static let bounds = Histogram.latencyBuckets

    /// Codes that say the service failed, rather than refused the caller's request.
    static let serviceErrors: Set<StatusCode> = [.unknown, .deadlineExceeded, .internal, .unavailable, .dataLoss]

    /// One second of one service.
    private struct Slot {
        var second: UInt64 = .max
        var calls: UInt64 = 0
        var errors: UInt64 = 0
        var buckets = [UInt64](repeating: 0, count: ServiceTraffic.bounds.count + 1)
    }

    /// One service's last `windowSeconds` seconds, a slot per second, reused round the ring.
    private final class Window: Sendable {
        let slots = Mutex([Slot](repeating: Slot(), count: ServiceTraffic.windowSeconds))
    }

    /// What a service's window adds up to.
    struct Figures: Sendable, Equatable {
        var calls: UInt64
        var errors: UInt64
        /// The upper bound, in milliseconds, of the bucket holding the 99th percentile; 0 without calls.
        var p99Milliseconds: Double
    }

    private let windows: [String: Window]
    private let started: UInt64

    /// Windows for `services` (the gateway's backend areas), empty from `now`.
    init(services: some Sequence<String>, now: UInt64) {
        windows = Dictionary(uniqueKeysWithValues: services.map { ($0, Window()) })
        started = now
    }

    /// Counts one call to `service` that ended with `code` after `nanoseconds`, at `now`.
    func record(service: String, code: StatusCode, nanoseconds: UInt64, now: UInt64) {
        guard let window = windows[service] else { return }
        let second = now / 1_000_000_000
        let seconds = Double(nanoseconds) * 1e-9
        var bucket = 0
        while bucket < Self.bounds.count, seconds > Self.bounds[bucket] { bucket += 1 }
        let failed = Self.serviceErrors.contains(code)
        window.slots.withLock { slots in
            let index = Int(second % UInt64(Self.windowSeconds))
            if slots[index].second != second { slots[index] = Slot(second: second) }
            slots[index].calls += 1
            if failed { slots[index].errors += 1 }
            slots[index].buckets[bucket] += 1
        }
    }

    /// The figures of `service` over the window ending at `now`; nil for a service the gateway does not route.
    func figures(service: String, now: UInt64) -> Figures? {
        guard let window = windows[service] else { return nil }
        let second = now / 1_000_000_000
        var calls: UInt64 = 0
        var errors: UInt64 = 0
        var buckets = [UInt64](repeating: 0, count: Self.bounds.count + 1)
        window.slots.withLock { slots in
            for slot in slots
            where slot.second != .max && slot.second <= second
                && second - slot.second < UInt64(Self.windowSeconds)
            {
                calls += slot.calls
                errors += slot.errors
                for index in buckets.indices { buckets[index] += slot.buckets[index] }
            }
        }
        return Figures(calls: calls, errors: errors, p99Milliseconds: Self.percentile99(buckets, calls: calls))
    }

    /// The seconds the window covers at `now`: a full minute, or less while the gateway has been up for less.
    func windowSeconds(now: UInt64) -> Int {
        let up = now > started ? (now - started) / 1_000_000_000 : 0
        return Int(max(1, min(UInt64(Self.windowSeconds), up + 1)))
    }

    private static func percentile99(_ buckets: [UInt64], calls: UInt64) -> Double {
        guard calls > 0 else { return 0 }
        // The smallest bucket at or below which at least 99% of the calls fall (rounded up: 1 call of 1 is it).
        let needed = (calls * 99 + 99) / 100
        var seen: UInt64 = 0
        for (index, count) in buckets.enumerated() {
            seen += count
            if seen >= needed { return index < bounds.count ? bounds[index] * 1000 : bounds[bounds.count - 1] * 1000 }
        }
        return bounds[bounds.count - 1] * 1000
    }
}

extension Result where Failure == RPCError {
    /// The status a call with this outcome answered: OK, or the error's code.
    var code: StatusCode {
        if case .failure(let error) = self { return error.code }
        return .ok
    }

    /// The error, or nil when the call succeeded.
    var failure: RPCError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
