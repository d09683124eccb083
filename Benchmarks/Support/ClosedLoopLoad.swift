/// Calls per second and latency percentiles of one operation, measured by `ClosedLoopLoad`.
public struct LoadMeasurement: Sendable {
    public var name: String
    public var calls: Int
    public var errors: Int
    public var seconds: Double
    public var p50Microseconds: UInt64
    public var p99Microseconds: UInt64

    public init(
        name: String, calls: Int, errors: Int, seconds: Double, p50Microseconds: UInt64, p99Microseconds: UInt64
    ) {
        self.name = name
        self.calls = calls
        self.errors = errors
        self.seconds = seconds
        self.p50Microseconds = p50Microseconds
        self.p99Microseconds = p99Microseconds
    }

    public var perSecond: Double { seconds > 0 ? Double(calls) / seconds : 0 }

    /// One human-readable line: "name: 1234 calls/s (…)".
    public func summaryLine(concurrency: Int) -> String {
        "\(name): \(Int(perSecond.rounded())) calls/s (\(calls) calls, \(errors) errors, p50 \(p50Microseconds) µs, "
            + "p99 \(p99Microseconds) µs, \(concurrency) in flight)"
    }

    /// A JSON object for `.bench/<name>.json`.
    public var jsonObject: String {
        let rate = (perSecond * 10).rounded() / 10
        return "{\"name\":\"\(name)\",\"calls_per_second\":\(rate),\"calls\":\(calls),\"errors\":\(errors),"
            + "\"p50_us\":\(p50Microseconds),\"p99_us\":\(p99Microseconds)}"
    }
}

/// A closed-loop load: `concurrency` workers each call an operation back to back for a fixed time.
///
/// The benchmarks (`rave-bench`) use it to drive the services' handlers in-process; latencies are kept exactly
/// (sorted at the end), which suits runs of seconds, not hours.
public enum ClosedLoopLoad {
    /// Runs `operation(worker, iteration)` from `concurrency` workers for `seconds`, each worker at least once.
    public static func measure(
        _ name: String, concurrency: Int, seconds: Double,
        _ operation: @escaping @Sendable (_ worker: Int, _ iteration: Int) async throws -> Void
    ) async -> LoadMeasurement {
        let start = ContinuousClock.now
        let end = start + .milliseconds(Int(seconds * 1000))
        let results = await withTaskGroup(of: (latencies: [UInt64], errors: Int).self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var latencies: [UInt64] = []
                    var errors = 0
                    var iteration = 0
                    // At least one call per worker: a worker scheduled only after `end` on a busy machine
                    // would otherwise report nothing, and a short run could show an operation with no calls.
                    repeat {
                        let before = ContinuousClock.now
                        do {
                            try await operation(worker, iteration)
                            latencies.append(UInt64((ContinuousClock.now - before) / .microseconds(1)))
                        } catch {
                            errors += 1
                        }
                        iteration += 1
                    } while ContinuousClock.now < end
                    return (latencies, errors)
                }
            }
            var all: [(latencies: [UInt64], errors: Int)] = []
            for await result in group { all.append(result) }
            return all
        }
        let elapsed = ContinuousClock.now - start
        let latencies = results.flatMap(\.latencies).sorted()
        func percentile(_ fraction: Double) -> UInt64 {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))]
        }
        return LoadMeasurement(
            name: name, calls: latencies.count, errors: results.reduce(0) { $0 + $1.errors },
            seconds: Double(elapsed / .milliseconds(1)) / 1000, p50Microseconds: percentile(0.5),
            p99Microseconds: percentile(0.99))
    }
}
