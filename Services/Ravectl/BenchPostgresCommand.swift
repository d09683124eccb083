import Foundation
import RavePostgres

/// `ravectl bench postgres`: our PostgreSQL client's selects, pipelined inserts and COPY against one server.
///
/// scripts/bench-postgres.sh runs it next to pgbench on the same throwaway server for the baseline.
enum BenchPostgresCommand {
    static let usage = """
        ravectl bench postgres --url URL [--connections 16] [--duration 10] [--json FILE]
        """

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        let options = try Arguments(arguments, valueOptions: ["url", "connections", "duration", "json"])
        var configuration = PostgresBenchmark.Configuration()
        configuration.connections = try options.integer("connections", default: 16, in: 1...256)
        configuration.durationSeconds = Double(try options.integer("duration", default: 10, in: 1...3600))
        let benchmark = PostgresBenchmark(connectionString: try options.required("url"), configuration: configuration)
        let result = try await benchmark.run()
        print(
            """
            postgres selects: \(Int(result.selects.rowsPerSecond)) rows/s with \(result.selects.connections) \
            connections (p50 \(Int(result.selects.latency.p50)) µs, p99 \(Int(result.selects.latency.p99)) µs)
            postgres pipelined inserts: \(Int(result.pipelinedInserts.rowsPerSecond)) rows/s
            postgres copy: \(Int(result.copy.rowsPerSecond)) rows/s
            """)
        if let path = options.value("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(result).write(to: URL(fileURLWithPath: path))
        }
        return 0
    }
}
