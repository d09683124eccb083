import Foundation
import RaveAuth
import RaveMessages
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport

/// `rave-bench gateway`: the gateway in-process with stand-in backends, everything over real TLS on loopback.
///
/// Phases, each run `RAVE_BENCH_RUNS` times (3) for `RAVE_BENCH_SECONDS` (10) and reported as the median run:
/// Echo direct to the service vs through the gateway (`RAVE_BENCH_CONNECTIONS` × `RAVE_BENCH_IN_FLIGHT`,
/// 16 × 16), batches of 50 independent bets through the gateway to a wallet stand-in (4 × 4), and at one call
/// in flight the latency of a batch of 20 reads vs one read. The stand-ins answer from memory, so the numbers
/// are the gateway's own cost. Results go to stdout and `.bench/gateway.json` (or `RAVE_BENCH_OUT`).
package enum GatewayBenchmark {
    struct Parameters: Sendable {
        var seconds = 10.0
        var runs = 3
        var connections = 16
        var inFlight = 16
        var batchConnections = 4
        var batchInFlight = 4
        var betsPerBatch = 50
        var readsPerBatch = 20

        init(environment: [String: String]) {
            func integer(_ name: String) -> Int? { environment[name].flatMap(Int.init).map { max(1, $0) } }
            seconds = environment["RAVE_BENCH_SECONDS"].flatMap(Double.init) ?? seconds
            runs = integer("RAVE_BENCH_RUNS") ?? runs
            connections = integer("RAVE_BENCH_CONNECTIONS") ?? connections
            inFlight = integer("RAVE_BENCH_IN_FLIGHT") ?? inFlight
            batchConnections = integer("RAVE_BENCH_BATCH_CONNECTIONS") ?? batchConnections
            batchInFlight = integer("RAVE_BENCH_BATCH_IN_FLIGHT") ?? batchInFlight
        }
    }

    package static func run(environment: [String: String]) async -> Int32 {
        let parameters = Parameters(environment: environment)
        do {
            let stand = try await BenchmarkStand.start()
            let results = try await measure(stand, parameters: parameters)
            try await stand.stop()
            let report = BenchmarkReport(results: results, parameters: parameters)
            print(report.summary)
            let path = environment["RAVE_BENCH_OUT"] ?? ".bench/gateway.json"
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try report.json.write(toFile: path, atomically: true, encoding: .utf8)
            return results.joined().allSatisfy { $0.errors == 0 } ? 0 : 1
        } catch {
            print("rave-bench gateway failed: \(error)")
            return 1
        }
    }

    /// Every phase, `parameters.runs` times; one array of runs per phase.
    private static func measure(_ stand: BenchmarkStand, parameters: Parameters) async throws -> [[BenchmarkResult]] {
        let direct = try await stand.connections(parameters.connections, toGateway: false)
        let proxied = try await stand.connections(parameters.connections, toGateway: true)
        let batching = try await stand.connections(parameters.batchConnections, toGateway: true)
        let single = try await stand.connections(1, toGateway: true)
        defer { for connection in direct + proxied + batching + single { connection.close() } }
        let token = try stand.token(for: "bench-player")
        let payload = [UInt8](repeating: 7, count: 32)
        let echo = BenchmarkWorkload(
            method: "rave.echo.v1.Echo/Echo",
            makeRequest: { _ in EchoV1.EchoRequest(payload: payload).protobufBytes() },
            check: { (try? EchoV1.EchoResponse(protobufBytes: $0))?.payload.count == payload.count })
        var proxiedEcho = echo
        proxiedEcho.metadata = [MetadataKey.authorization: "Bearer \(token)"]
        let bets = BenchmarkBatches.bets(count: parameters.betsPerBatch, token: token)
        let reads = BenchmarkBatches.reads(count: parameters.readsPerBatch, token: token)

        var phases = [[BenchmarkResult]](repeating: [], count: 5)
        for run in 1...parameters.runs {
            print("== run \(run)/\(parameters.runs), \(parameters.seconds) s per phase")
            let seconds = parameters.seconds
            phases[0].append(
                await BenchmarkResult.measure(
                    "echo direct", workload: echo, connections: direct, chains: parameters.inFlight, seconds: seconds))
            phases[1].append(
                await BenchmarkResult.measure(
                    "echo through the gateway", workload: proxiedEcho, connections: proxied,
                    chains: parameters.inFlight, seconds: seconds))
            var betBatches = await BenchmarkResult.measure(
                "batches of \(parameters.betsPerBatch) bets", workload: bets, connections: batching,
                chains: parameters.batchInFlight, seconds: seconds)
            betBatches.itemsPerCall = parameters.betsPerBatch
            phases[2].append(betBatches)
            phases[3].append(
                await BenchmarkResult.measure(
                    "one read, 1 in flight", workload: proxiedEcho, connections: single, chains: 1,
                    seconds: seconds / 2))
            var readBatches = await BenchmarkResult.measure(
                "batch of \(parameters.readsPerBatch) reads, 1 in flight", workload: reads, connections: single,
                chains: 1, seconds: seconds / 2)
            readBatches.itemsPerCall = parameters.readsPerBatch
            phases[4].append(readBatches)
            for phase in phases { if let last = phase.last { print("  " + last.summaryLine) } }
        }
        return phases
    }
}

/// The batches the benchmark sends through the gateway.
enum BenchmarkBatches {
    static let batchMethod = "\(GatewayV1.GatewayClient.serviceName)/Batch"
    static let placeBetMethod = "\(WalletV1.WalletClient.serviceName)/PlaceBet"

    /// `count` independent PlaceBet calls per batch, every bet id new.
    static func bets(count: Int, token: String) -> BenchmarkWorkload {
        let prefix = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return BenchmarkWorkload(
            method: batchMethod, metadata: [MetadataKey.authorization: "Bearer \(token)"],
            makeRequest: { sequence in
                var request = GatewayV1.BatchRequest()
                request.calls = (0..<count).map { index in
                    var bet = WalletV1.Bet()
                    bet.gameId = "slots"
                    bet.betId = "\(prefix)-\(sequence)-\(index)"
                    bet.wager = "1.00"
                    bet.currency = "COIN"
                    var call = GatewayV1.BatchCall()
                    call.name = "bet\(index)"
                    call.method = placeBetMethod
                    call.request = WalletV1.PlaceBetRequest(bet: bet).protobufBytes()
                    return call
                }
                return request.protobufBytes()
            },
            check: { allSucceeded($0, count: count) })
    }

    /// `count` independent Echo calls per batch (the cheapest read there is).
    static func reads(count: Int, token: String) -> BenchmarkWorkload {
        var request = GatewayV1.BatchRequest()
        request.calls = (0..<count).map { index in
            var call = GatewayV1.BatchCall()
            call.name = "read\(index)"
            call.method = "rave.echo.v1.Echo/Echo"
            call.request = EchoV1.EchoRequest(payload: [UInt8](repeating: 7, count: 32)).protobufBytes()
            return call
        }
        let bytes = request.protobufBytes()
        return BenchmarkWorkload(
            method: batchMethod, metadata: [MetadataKey.authorization: "Bearer \(token)"],
            makeRequest: { _ in bytes }, check: { allSucceeded($0, count: count) })
    }

    private static func allSucceeded(_ response: [UInt8], count: Int) -> Bool {
        guard let results = try? GatewayV1.BatchResponse(protobufBytes: response).results else { return false }
        return results.count == count && results.allSatisfy { $0.code == .ok }
    }
}
