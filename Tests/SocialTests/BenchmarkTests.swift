import RavePostgres
import RaveTelemetry
import Testing

@testable import Social
@testable import SocialBenchmarks

@Suite("Benchmark")
struct BenchmarkTests {
    /// `rave-bench social` at toy size, so the benchmark keeps working as the service changes.
    @Test func benchmarkRunsWithoutErrors() async throws {
        try await SocialHarness.withDatabase(prefix: "rave_social_bench_") { url in
            var configuration = PostgresPool.Configuration(connectionString: url)
            configuration.size = 4
            let pool = try PostgresPool(configuration: configuration, group: SocialHarness.group)
            defer { pool.shutdown() }
            _ = try await Migrator(pool: pool, directory: SocialHarness.socialMigrations).migrate()
            var parameters = SocialBenchmark.Parameters()
            parameters.users = 60
            parameters.friends = 10
            parameters.seconds = 0.3
            parameters.concurrency = 2
            let measurements = try await SocialBenchmark(
                pool: pool, parameters: parameters, loop: SocialHarness.group.next(),
                logger: Logger(label: "social-bench-test", level: .warning)
            ).run()
            #expect(measurements.count == 3)
            for measurement in measurements {
                #expect(measurement.errors == 0, "\(measurement.name)")
                #expect(measurement.calls > 0, "\(measurement.name)")
            }
        }
    }
}
