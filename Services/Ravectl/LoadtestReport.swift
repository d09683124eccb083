import Foundation

/// The load test's results: a summary on standard output, `.bench/leaderboards.json`, and an SVG chart.
struct LoadtestReport {
    var settings: LoadtestSettings
    var measurements: LoadtestMeasurements

    static let quantiles: [(name: String, value: Double)] = [
        ("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999),
    ]

    /// Operations that ran, in the order of `LoadtestOperation.allCases`.
    private var operations: [LoadtestOperation] {
        LoadtestOperation.allCases.filter { measurements.histograms[$0] != nil || measurements.errors[$0] != nil }
    }

    private var betsPerSecond: Double { Double(measurements.betsPlaced) / Double(settings.durationSeconds) }

    private func throughput(_ operation: LoadtestOperation) -> Double {
        Double(measurements.histograms[operation]?.total ?? 0) / Double(settings.durationSeconds)
    }

    func print() {
        let loop =
            settings.rate.map { "open loop at \($0) calls/s" }
            ?? "closed loop, \(settings.connections) connections × \(settings.inFlight) in flight"
        Swift.print("")
        if let bets = settings.bets {
            Swift.print(
                "bets loadtest: \(settings.connections) guests, batches of \(bets.size) bets, \(loop), "
                    + "\(settings.durationSeconds) s after \(settings.warmupSeconds) s warm-up, \(settings.target)")
        } else {
            Swift.print(
                "leaderboards loadtest: \(settings.users) users, \(settings.boardKeys.count) boards, \(loop), "
                    + "users \(settings.userChoice), boards \(settings.boardChoice), \(settings.durationSeconds) s "
                    + "after \(settings.warmupSeconds) s warm-up, \(settings.target)")
        }
        var all = LatencyHistogram()
        for operation in operations {
            let histogram = measurements.histograms[operation] ?? LatencyHistogram()
            all.merge(histogram)
            Swift.print(line(operation.rawValue, histogram, errors: measurements.errors[operation] ?? 0))
        }
        Swift.print(line("all", all, errors: measurements.errors.values.reduce(0, +)))
        if measurements.histograms[.submit] != nil {
            Swift.print(
                "  new bests: \(measurements.newBests) of \(measurements.histograms[.submit]?.total ?? 0) submits")
        }
        if settings.bets != nil {
            Swift.print("  bets/s    \(Int(betsPerSecond)) (bets of batches in which every bet succeeded)")
        }
        for error in measurements.sampleErrors { Swift.print("  error: \(error)") }
    }

    private func line(_ name: String, _ histogram: LatencyHistogram, errors: Int) -> String {
        let rate = Int(Double(histogram.total) / Double(settings.durationSeconds))
        let latencies = Self.quantiles.map { "\($0.name) \(Self.milliseconds(histogram.value(atQuantile: $0.value)))" }
        return "  \(name.padding(toLength: 9, withPad: " ", startingAt: 0)) \(rate) calls/s, \(errors) failed, ms: "
            + latencies.joined(separator: " ") + " max \(Self.milliseconds(histogram.maximum))"
    }

    static func milliseconds(_ microseconds: UInt64) -> String {
        String(format: "%.2f", Double(microseconds) / 1000)
    }

    // MARK: - Files

    private struct OperationResult: Encodable {
        var throughputPerSecond: Double
        var calls: Int
        var errors: Int
        var latencyMicroseconds: [String: UInt64]
    }

    private struct Parameters: Encodable {
        var target: String
        var users: Int
        var boards: Int
        var mix: String
        var userChoice: String
        var boardChoice: String
        var connections: Int
        var inFlight: Int
        var rate: Int?
        var warmupSeconds: Int
        var durationSeconds: Int
        var pageSize: Int
        var adjacent: Int
    }

    private struct Document: Encodable {
        var benchmark: String
        var parameters: Parameters
        var operations: [String: OperationResult]
        var newBests: Int
        /// Bets per batch and bets per second (`ravectl loadtest bets`).
        var betsPerBatch: Int?
        var betsPerSecond: Double?
        var timeline: [[String: UInt64]]
    }

    func write(json path: String, svg svgPath: String?) {
        var results: [String: OperationResult] = [:]
        for operation in operations {
            let histogram = measurements.histograms[operation] ?? LatencyHistogram()
            var latency = Dictionary(
                uniqueKeysWithValues: Self.quantiles.map { ($0.name, histogram.value(atQuantile: $0.value)) })
            latency["max"] = histogram.maximum
            results[operation.rawValue] = OperationResult(
                throughputPerSecond: throughput(operation), calls: histogram.total,
                errors: measurements.errors[operation] ?? 0, latencyMicroseconds: latency)
        }
        let document = Document(
            benchmark: settings.bets == nil ? "leaderboards" : "bets",
            parameters: Parameters(
                target: settings.target, users: settings.users, boards: settings.boardKeys.count, mix: settings.mix,
                userChoice: settings.userChoice.description, boardChoice: settings.boardChoice.description,
                connections: settings.connections, inFlight: settings.inFlight, rate: settings.rate,
                warmupSeconds: settings.warmupSeconds, durationSeconds: settings.durationSeconds,
                pageSize: settings.pageSize, adjacent: settings.adjacent),
            operations: results, newBests: measurements.newBests, betsPerBatch: settings.bets?.size,
            betsPerSecond: settings.bets == nil ? nil : betsPerSecond,
            timeline: measurements.timeline.map { second in
                [
                    "calls": UInt64(second.total), "p50": second.value(atQuantile: 0.5),
                    "p99": second.value(atQuantile: 0.99), "max": second.maximum,
                ]
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let svg = svgPath ?? (path.hasSuffix(".json") ? String(path.dropLast(5)) + ".svg" : path + ".svg")
        do {
            let url = URL(fileURLWithPath: path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try encoder.encode(document).write(to: url)
            let chart = LoadtestChart(
                timeline: measurements.timeline, warmupSeconds: settings.warmupSeconds,
                histograms: operations.map { ($0.rawValue, measurements.histograms[$0] ?? LatencyHistogram()) })
            // In place, as the results: a rename would replace a device given as the path.
            try Data(chart.svg().utf8).write(to: URL(fileURLWithPath: svg))
            Swift.print("  results: \(path), chart: \(svg)")
        } catch {
            Swift.print("  cannot write the results: \(error)")
        }
    }
}
