import Foundation
import RaveTelemetry
import RaveTestSupport
import Testing

@Suite struct MetricsTests {
    @Test func countersGaugesAndHistogramsRecord() {
        let registry = MetricsRegistry()
        let counter = registry.counter("jobs_total", help: "Jobs.")
        counter.increment()
        counter.increment(by: 4)
        #expect(counter.value == 5)
        #expect(registry.counter("jobs_total", help: "Jobs.") === counter)

        let gauge = registry.gauge("in_flight", help: "In flight.")
        gauge.increment()
        gauge.increment(by: 2.5)
        gauge.decrement()
        #expect(gauge.value == 2.5)

        let histogram = registry.histogram("latency", help: "Latency.")
        histogram.observe(0.003)
        histogram.observe(.milliseconds(20))
        histogram.observe(nanoseconds: 50_000_000_000)
        #expect(histogram.totals.count == 3)
        #expect(abs(histogram.totals.sum - 50.023) < 1e-9)
    }

    @Test func openTelemetryNamesBecomePrometheusSafe() {
        #expect(MetricsRegistry.prometheusName("rpc.server.duration") == "rpc_server_duration")
        #expect(MetricsRegistry.prometheusName("rpc.method") == "rpc_method")
        #expect(MetricsRegistry.prometheusName("9lives-total") == "_lives_total")
    }

    @Test func concurrentIncrementsAreNotLost() async {
        let registry = MetricsRegistry()
        let counter = registry.counter("hits_total", help: "Hits.")
        let gauge = registry.gauge("level", help: "Level.")
        let histogram = registry.histogram("seconds", help: "Seconds.")
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<10_000 {
                        counter.increment()
                        gauge.increment()
                        histogram.observe(0.001)
                    }
                }
            }
        }
        #expect(counter.value == 80_000)
        #expect(gauge.value == 80_000)
        #expect(histogram.totals.count == 80_000)
    }

    @Test func expositionParsesWithPrometheusClient() throws {
        let registry = MetricsRegistry()
        let ok = registry.counter(
            "rpc_server_requests_total", help: "Requests served, by method and status.",
            labels: [("rpc.method", "rave.echo.v1.Echo/Say"), ("rpc.status", "OK")])
        ok.increment(by: 7)
        registry.counter(
            "rpc_server_requests_total", help: "ignored: the first help wins",
            labels: [("rpc.method", "weird \"quoted\" \\ name\nline"), ("rpc.status", "INTERNAL")]
        ).increment()
        let latency = registry.histogram(
            "rpc.server.duration", help: "Time to answer, in seconds.\nSecond line \\ backslash.",
            labels: [("rpc.method", "rave.echo.v1.Echo/Say")])
        for value in [0.00005, 0.0002, 0.0002, 0.003, 0.7, 42.0] { latency.observe(value) }
        registry.gauge("rpc.server.in_flight", help: "Requests being handled.").set(3)
        registry.gauge("postgres.pool.idle", help: "Idle connections.", labels: [("pool", "main")]) { 4 }

        let families = try parseWithPrometheusClient(registry.exposition())

        let requests = try #require(families["rpc_server_requests"])
        #expect(requests.type == "counter")
        #expect(requests.help == "Requests served, by method and status.")
        #expect(
            requests.samples.contains {
                $0.name == "rpc_server_requests_total" && $0.value == 7
                    && $0.labels == ["rpc_method": "rave.echo.v1.Echo/Say", "rpc_status": "OK"]
            })
        #expect(
            requests.samples.contains {
                $0.labels["rpc_method"] == "weird \"quoted\" \\ name\nline" && $0.value == 1
            })

        let duration = try #require(families["rpc_server_duration"])
        #expect(duration.type == "histogram")
        #expect(duration.help == "Time to answer, in seconds.\nSecond line \\ backslash.")
        let buckets = duration.samples.filter { $0.name == "rpc_server_duration_bucket" }
        #expect(buckets.count == Histogram.latencyBuckets.count + 1)
        func bucket(_ le: String) -> Double? { buckets.first { $0.labels["le"] == le }?.value }
        #expect(bucket("0.0001") == 1)
        #expect(bucket("0.00025") == 3)
        #expect(bucket("0.005") == 4)
        #expect(bucket("1.0") == 5)
        #expect(bucket("10.0") == 5)
        #expect(bucket("+Inf") == 6)
        #expect(duration.samples.first { $0.name == "rpc_server_duration_count" }?.value == 6)
        let sum = try #require(duration.samples.first { $0.name == "rpc_server_duration_sum" }?.value)
        #expect(abs(sum - 42.70345) < 1e-9)

        #expect(families["rpc_server_in_flight"]?.samples.first?.value == 3)
        #expect(families["postgres_pool_idle"]?.samples.first?.labels == ["pool": "main"])
        #expect(families["postgres_pool_idle"]?.samples.first?.value == 4)
    }

    // MARK: - The reference parser

    struct Family: Decodable {
        var type: String
        var help: String
        var samples: [Sample]
    }

    struct Sample: Decodable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// Parses `text` with the Prometheus project's own Python parser and returns the families it saw.
    func parseWithPrometheusClient(_ text: String) throws -> [String: Family] {
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = {}
            for family in text_string_to_metric_families(sys.stdin.read()):
                out[family.name] = {"type": family.type, "help": family.documentation,
                    "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples]}
            print(json.dumps(out))
            """
        let process = try ChildProcess.start(
            "/usr/bin/python3", ["-c", script], input: .pipe, output: .pipe, errors: .pipe)
        try process.write(Array(text.utf8))
        process.closeInput()
        let (data, diagnostics) = process.collectOutput()
        guard process.wait() == .exited(0) else {
            Issue.record("prometheus_client rejected the exposition: \(String(decoding: diagnostics, as: UTF8.self))")
            return [:]
        }
        return try JSONDecoder().decode([String: Family].self, from: Data(data))
    }
}
