import Glibc
import RaveRPC
import RaveTransport
import Synchronization

/// What one benchmark phase sends: a method, a request per call, and a check of each response.
struct BenchmarkWorkload: Sendable {
    var method: String
    var metadata: [String: String] = [:]
    /// Builds the request of call number `sequence` (encoded per call, as a real client would).
    var makeRequest: @Sendable (_ sequence: Int) -> [UInt8]
    /// True when the response is what the call should have answered.
    var check: @Sendable (_ response: [UInt8]) -> Bool
}

/// One connection's share of a closed-loop benchmark: `chains` calls kept in flight, each started from the
/// completion of the one before, on the connection's event loop.
///
/// No Task or continuation per call, so the load generator, which shares the cores with the gateway and the
/// backends it measures, costs as little as a lean client can.
final class BenchmarkConnectionLoad: @unchecked Sendable {
    // @unchecked: the mutable fields are touched only on `connection.eventLoop` (`run` hops there first).

    private let connection: RPCConnection
    private let workload: BenchmarkWorkload
    private let end: UInt64
    private var latencies: [UInt64] = []
    private var errors = 0
    private var sequence = 0
    private var runningChains = 0
    private var finished: CheckedContinuation<(latencies: [UInt64], errors: Int), Never>?

    init(connection: RPCConnection, workload: BenchmarkWorkload, end: UInt64) {
        self.connection = connection
        self.workload = workload
        self.end = end
    }

    /// Runs the chains until `end`; returns the latencies (µs) of the successful calls and the failure count.
    func run(chains: Int) async -> (latencies: [UInt64], errors: Int) {
        await withCheckedContinuation { continuation in
            connection.eventLoop.execute { [self] in
                finished = continuation
                runningChains = chains
                for _ in 0..<chains { callNext() }
            }
        }
    }

    private func callNext() {
        let before = monotonicNanoseconds()
        guard before < end else { return chainEnded() }
        sequence += 1
        let options = CallOptions(timeout: .seconds(30), metadata: workload.metadata, maxRetries: 0)
        connection.startCall(method: workload.method, request: workload.makeRequest(sequence), options: options) {
            [self] result in
            if case .success(let response) = result, workload.check(response) {
                latencies.append((monotonicNanoseconds() - before) / 1000)
            } else {
                errors += 1
            }
            // A dead connection fails every call at once; retrying would only spin.
            if connection.isUsable { callNext() } else { chainEnded() }
        }
    }

    private func chainEnded() {
        runningChains -= 1
        guard runningChains == 0 else { return }
        finished?.resume(returning: (latencies, errors))
        finished = nil
    }
}

/// The outcome of one benchmark phase.
struct BenchmarkResult: Sendable {
    var name: String
    var calls: Int
    var errors: Int
    var seconds: Double
    var p50Microseconds: UInt64
    var p99Microseconds: UInt64
    /// Items per call (bets per batch), for the items-per-second figure.
    var itemsPerCall = 1
    /// CPU time of the whole process (load, gateway and backends) per call: unlike throughput it hardly
    /// depends on what else the machine runs.
    var cpuMicrosecondsPerCall = 0.0

    var callsPerSecond: Double { seconds > 0 ? Double(calls) / seconds : 0 }
    var itemsPerSecond: Double { callsPerSecond * Double(itemsPerCall) }

    /// Runs `workload` over `connections` (each with `chains` calls in flight) for `seconds`.
    static func measure(
        _ name: String, workload: BenchmarkWorkload, connections: [RPCConnection], chains: Int, seconds: Double
    ) async -> BenchmarkResult {
        let start = monotonicNanoseconds()
        let cpuBefore = processCPUMicroseconds()
        let end = start + UInt64(seconds * 1e9)
        let outcomes = await withTaskGroup(of: (latencies: [UInt64], errors: Int).self) { group in
            for connection in connections {
                let load = BenchmarkConnectionLoad(connection: connection, workload: workload, end: end)
                group.addTask { await load.run(chains: chains) }
            }
            var all: [(latencies: [UInt64], errors: Int)] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        let cpu = processCPUMicroseconds() - cpuBefore
        let latencies = outcomes.flatMap(\.latencies).sorted()
        func percentile(_ fraction: Double) -> UInt64 {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))]
        }
        var result = BenchmarkResult(
            name: name, calls: latencies.count, errors: outcomes.reduce(0) { $0 + $1.errors }, seconds: elapsed,
            p50Microseconds: percentile(0.5), p99Microseconds: percentile(0.99))
        result.cpuMicrosecondsPerCall = latencies.isEmpty ? 0 : cpu / Double(latencies.count)
        return result
    }

    /// User plus system CPU time this process has used, in microseconds.
    private static func processCPUMicroseconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let user = Double(usage.ru_utime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec)
        return user + Double(usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_stime.tv_usec)
    }

    /// "name: 1234 calls/s (…)", with items per second when a call carries several.
    var summaryLine: String {
        let items = itemsPerCall > 1 ? ", \(Int(itemsPerSecond.rounded())) items/s" : ""
        return "\(name): \(Int(callsPerSecond.rounded())) calls/s\(items) (\(calls) calls, \(errors) errors, "
            + "p50 \(p50Microseconds) µs, p99 \(p99Microseconds) µs, CPU \(Int(cpuMicrosecondsPerCall.rounded())) µs/call)"
    }

    var jsonObject: String {
        "{\"name\":\"\(name)\",\"calls_per_second\":\(Int(callsPerSecond.rounded())),"
            + "\"items_per_second\":\(Int(itemsPerSecond.rounded())),\"items_per_call\":\(itemsPerCall),"
            + "\"calls\":\(calls),\"errors\":\(errors),\"p50_us\":\(p50Microseconds),\"p99_us\":\(p99Microseconds),"
            + "\"cpu_us_per_call\":\((cpuMicrosecondsPerCall * 10).rounded() / 10)}"
    }
}
