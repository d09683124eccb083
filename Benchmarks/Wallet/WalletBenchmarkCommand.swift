import BenchmarkSupport
import Foundation
import RaveMerges
import RavePostgres
import RaveTelemetry
import RaveTransport
import Wallet

/// `rave-bench wallet`: runs `WalletBenchmark` against the scratch database `RAVE_DATABASE_URL`, with
/// `pgbench -N -c 16 -j 2` on the same database as the baseline of each run.
///
/// `RAVE_BENCH_SECONDS` (default 5), `RAVE_BENCH_RUNS` (3), `RAVE_BENCH_CONCURRENCY` (50 single bets in flight),
/// `RAVE_BENCH_BATCH_CONCURRENCY` (16 batches in flight, as many as pgbench's clients), `RAVE_BENCH_BATCH_SIZE` (50) and the service's own
/// `RAVE_WALLET_LANES` tune it (`RAVE_BENCH_ONLY=batches` measures batches alone); medians go to
/// stdout and, with every run, to `.bench/wallet.json` (or `RAVE_BENCH_OUT`). Exits non-zero when a call failed
/// or the ledger does not balance afterwards.
package enum WalletBenchmarkCommand {
    /// One run: the baseline and both measurements, taken back to back on the same server.
    struct Run {
        var pgbenchTPS: Double
        var single: WalletBenchmark.Measured
        var batches: WalletBenchmark.Measured
    }

    package static func run(environment: [String: String]) async -> Int32 {
        guard let url = environment["RAVE_DATABASE_URL"] else {
            print("rave-bench wallet: set RAVE_DATABASE_URL to a scratch database (it is migrated and filled)")
            return 64
        }
        var parameters = WalletBenchmark.Parameters()
        if let seconds = environment["RAVE_BENCH_SECONDS"].flatMap(Double.init) { parameters.seconds = seconds }
        if let value = environment["RAVE_BENCH_CONCURRENCY"].flatMap(Int.init) {
            parameters.singleConcurrency = max(1, value)
        }
        if let value = environment["RAVE_BENCH_BATCH_CONCURRENCY"].flatMap(Int.init) {
            parameters.batchConcurrency = max(1, value)
        }
        if let value = environment["RAVE_BENCH_BATCH_SIZE"].flatMap(Int.init) {
            parameters.batchSize = min(max(1, value), WalletDependencies.maximumBatchSize)
        }
        let runCount = max(1, environment["RAVE_BENCH_RUNS"].flatMap(Int.init) ?? 3)
        do {
            let group = try EventLoopGroup(loopCount: 2)
            defer { group.shutdown() }
            var configuration = PostgresPool.Configuration(connectionString: url)
            configuration.size = 16
            let pool = try PostgresPool(configuration: configuration, group: group)
            defer { pool.shutdown() }
            _ = try await Migrator(pool: pool, directory: WalletMain.migrationsDirectory).migrate()
            // Listening as the service does, so resolving a bettor's id costs what it costs in production.
            let merges = MergedUsers(pool: pool, loop: group.next(), logger: Logger(label: "wallet-bench"))
            return try await merges.listening {
                try await measure(
                    pool: pool, url: url, merges: merges, environment: environment, parameters: parameters,
                    runCount: runCount)
            }
        } catch {
            print("rave-bench wallet failed: \(error)")
            return 1
        }
    }

    /// Seeds, then measures `runCount` runs with the pgbench baseline; the process's exit status.
    private static func measure(
        pool: PostgresPool, url: String, merges: MergedUsers, environment: [String: String],
        parameters: WalletBenchmark.Parameters, runCount: Int
    ) async throws -> Int32 {
        let dependencies = WalletDependencies(
            pool: pool, users: BenchmarkPlayers(),
            laneCount: try WalletConfiguration(environment: environment).laneCount, merges: merges)
        let benchmark = WalletBenchmark(dependencies: dependencies, parameters: parameters)
        try await benchmark.setUp()
        if environment["RAVE_BENCH_ONLY"] == "batches" {
            return try await batchesOnly(benchmark, runs: runCount, concurrency: parameters.batchConcurrency)
        }
        _ = try await pgbench(["-i", "-s", "10", "-q", url])
        var runs: [Run] = []
        for index in 1...runCount {
            let output = try await pgbench([
                "-N", "-c", "16", "-j", "2", "-T", String(Int(parameters.seconds)), url,
            ])
            let single = try await benchmark.measureSingleBets()
            let batches = try await benchmark.measureBatches()
            let run = Run(pgbenchTPS: tps(in: output), single: single, batches: batches)
            print(
                "run \(index)/\(runCount): pgbench -N \(Int(run.pgbenchTPS)) tps; "
                    + single.load.summaryLine(concurrency: parameters.singleConcurrency) + ", "
                    + single.perBetLine + "; "
                    + batches.load.summaryLine(concurrency: parameters.batchConcurrency) + ", "
                    + batches.perBetLine)
            runs.append(run)
        }
        let problems = try await benchmark.ledgerProblems()
        let fallbacks = dependencies.unitByUnitRounds
        print(summary(runs))
        print("rounds settled unit by unit: \(fallbacks); ledger: \(problems ?? "balanced")")
        let path = environment["RAVE_BENCH_OUT"] ?? ".bench/wallet.json"
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try json(
            runs, parameters: parameters, lanes: dependencies.laneCount,
            fallbacks: fallbacks
        ).write(
            toFile: path, atomically: true, encoding: .utf8)
        let failed = runs.contains { $0.single.load.errors > 0 || $0.batches.load.errors > 0 }
        return failed || problems != nil ? 1 : 0
    }

    /// `RAVE_BENCH_ONLY=batches`: only the batch measurement, without pgbench or single bets, to profile it alone.
    static func batchesOnly(_ benchmark: WalletBenchmark, runs: Int, concurrency: Int) async throws -> Int32 {
        var failed = false
        for index in 1...runs {
            let batches = try await benchmark.measureBatches()
            print(
                "run \(index)/\(runs): " + batches.load.summaryLine(concurrency: concurrency) + ", "
                    + batches.perBetLine)
            failed = failed || batches.load.errors > 0
        }
        return failed ? 1 : 0
    }

    /// Runs pgbench (found on PATH) on a thread of its own, since waiting for a process blocks; returns its output.
    static func pgbench(_ arguments: [String]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try runPgbench(arguments) }) }
            thread.name = "wallet-bench-pgbench"
            thread.start()
        }
    }

    private static func runPgbench(_ arguments: [String]) throws -> String {
        // pgbench ends a -T run on SIGALRM; threads started from Swift's pool inherit a mask that blocks it, and
        // the child would inherit that too and never stop.
        var alarm = sigset_t()
        sigemptyset(&alarm)
        sigaddset(&alarm, SIGALRM)
        pthread_sigmask(SIG_UNBLOCK, &alarm, nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["pgbench"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw PostgresError(.client, "pgbench \(arguments.first ?? "") failed: \(text)")
        }
        return text
    }

    /// The "tps = 1234.5 (…)" figure of pgbench's report.
    static func tps(in output: String) -> Double {
        for line in output.split(separator: "\n") where line.hasPrefix("tps = ") {
            if let value = line.dropFirst(6).split(separator: " ").first.flatMap({ Double($0) }) { return value }
        }
        return 0
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    /// The run whose value is the median, so its latencies are reported with it.
    static func medianRun(_ runs: [Run], by measurement: (Run) -> LoadMeasurement) -> LoadMeasurement {
        runs.map(measurement).sorted { $0.perSecond < $1.perSecond }[runs.count / 2]
    }

    /// A human summary: medians against the targets.
    static func summary(_ runs: [Run]) -> String {
        let baseline = median(runs.map(\.pgbenchTPS))
        let single = medianRun(runs) { $0.single.load }
        let batches = medianRun(runs) { $0.batches.load }
        func line(_ measurement: LoadMeasurement, target: Double) -> String {
            let rate = Int(measurement.perSecond.rounded())
            let ratio = baseline > 0 ? measurement.perSecond / baseline : 0
            return "\(measurement.name): median \(rate) bets/s (target \(Int(target)): "
                + (measurement.perSecond >= target ? "ok" : "BELOW") + "), \(String(format: "%.1f", ratio))× pgbench, "
                + "p50 \(measurement.p50Microseconds) µs, p99 \(measurement.p99Microseconds) µs per call"
        }
        return "pgbench -N -c 16 -j 2: median \(Int(baseline.rounded())) tps\n"
            + line(single, target: 5_000) + "\n" + line(batches, target: 20_000)
    }

    /// The machine-readable results `make bench` collects.
    static func json(
        _ runs: [Run], parameters: WalletBenchmark.Parameters, lanes: Int, fallbacks: Int
    ) -> String {
        let baseline = median(runs.map(\.pgbenchTPS))
        let single = medianRun(runs) { $0.single.load }
        let batches = medianRun(runs) { $0.batches.load }
        let all = runs.map { run in
            "{\"pgbench_tps\":\(run.pgbenchTPS),\"single\":\(run.single.load.jsonObject),"
                + "\"batches\":\(run.batches.load.jsonObject),\"single_cpu\":\(run.single.cpu.jsonObject),"
                + "\"batches_cpu\":\(run.batches.cpu.jsonObject),\"batch_rounds\":\(run.batches.rounds)}"
        }
        return "{\"benchmark\":\"wallet\",\"mode\":\"in-process handlers, real PostgreSQL, backed real-money bets\","
            + "\"parameters\":{\"seconds\":\(parameters.seconds),\"single_concurrency\":\(parameters.singleConcurrency),"
            + "\"batch_concurrency\":\(parameters.batchConcurrency),\"batch_size\":\(parameters.batchSize),"
            + "\"lanes\":\(lanes),"
            + "\"baseline\":\"pgbench -N -c 16 -j 2\"},"
            + "\"median\":{\"pgbench_tps\":\(baseline),\"single\":\(single.jsonObject),"
            + "\"batches\":\(batches.jsonObject),\"batches_vs_pgbench\":"
            + "\(baseline > 0 ? (batches.perSecond / baseline * 100).rounded() / 100 : 0)},"
            + "\"targets\":{\"single_bets_per_second\":5000,\"batch_bets_per_second\":20000,\"batches_vs_pgbench\":8},"
            + "\"rounds_settled_unit_by_unit\":\(fallbacks),\"runs\":[\(all.joined(separator: ","))]}\n"
    }
}
