import BenchmarkSupport
import Foundation
import RavePostgres
import RaveTelemetry
import RaveTransport
import Social

/// `rave-bench social`: runs `SocialBenchmark` against the scratch database `RAVE_DATABASE_URL`.
///
/// `RAVE_BENCH_USERS` (default 10000), `RAVE_BENCH_FRIENDS` (1000), `RAVE_BENCH_SECONDS` (5) and
/// `RAVE_BENCH_CONCURRENCY` (32) and `RAVE_BENCH_ROUNDS` (1, measurement rounds over one seed) tune it, and
/// `RAVE_BENCH_REUSE_SEED=1` measures a graph an earlier run left in the database instead of seeding it again;
/// results go to stdout and `.bench/social.json` (or `RAVE_BENCH_OUT`).
/// Exits non-zero when a call failed.
package enum SocialBenchmarkCommand {
    package static func run(environment: [String: String]) async -> Int32 {
        guard let url = environment["RAVE_DATABASE_URL"] else {
            print("rave-bench social: set RAVE_DATABASE_URL to a scratch database (it is migrated and filled)")
            return 64
        }
        var parameters = SocialBenchmark.Parameters()
        if let users = environment["RAVE_BENCH_USERS"].flatMap(Int.init) { parameters.users = max(10, users) }
        if let friends = environment["RAVE_BENCH_FRIENDS"].flatMap(Int.init) {
            parameters.friends = max(2, min(friends, parameters.users - 2)) / 2 * 2
        }
        if let seconds = environment["RAVE_BENCH_SECONDS"].flatMap(Double.init) { parameters.seconds = seconds }
        if let rounds = environment["RAVE_BENCH_ROUNDS"].flatMap(Int.init) { parameters.rounds = max(1, rounds) }
        if let ids = environment["RAVE_SOCIAL_FRIEND_CACHE_IDS"].flatMap(Int.init) {
            parameters.friendCacheIDs = max(0, ids)
        }
        parameters.reuseSeed = environment["RAVE_BENCH_REUSE_SEED"] == "1"
        if let concurrency = environment["RAVE_BENCH_CONCURRENCY"].flatMap(Int.init) {
            parameters.concurrency = max(1, concurrency)
        }
        do {
            let group = try EventLoopGroup(loopCount: 2)
            defer { group.shutdown() }
            var configuration = PostgresPool.Configuration(connectionString: url)
            configuration.size = 16
            configuration.statementTimeout = nil
            let pool = try PostgresPool(configuration: configuration, group: group)
            defer { pool.shutdown() }
            _ = try await Migrator(pool: pool, directory: SocialMain.migrationsDirectory).migrate()
            let logger = Logger(label: "social-bench", level: .notice)
            let measurements = try await SocialBenchmark(
                pool: pool, parameters: parameters, loop: group.next(), logger: logger
            ).run()
            print(summary(measurements, parameters: parameters))
            let path = environment["RAVE_BENCH_OUT"] ?? ".bench/social.json"
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try json(measurements, parameters: parameters).write(toFile: path, atomically: true, encoding: .utf8)
            return measurements.allSatisfy { $0.errors == 0 } ? 0 : 1
        } catch {
            print("rave-bench social failed: \(error)")
            return 1
        }
    }

    /// A human summary, one line per operation.
    static func summary(_ measurements: [BenchmarkMeasurement], parameters: SocialBenchmark.Parameters) -> String {
        measurements.map { $0.summaryLine(concurrency: parameters.concurrency) }.joined(separator: "\n")
    }

    /// The machine-readable results `make bench` collects.
    static func json(_ measurements: [BenchmarkMeasurement], parameters: SocialBenchmark.Parameters) -> String {
        let entries = measurements.map(\.jsonObject)
        return "{\"benchmark\":\"social\",\"mode\":\"in-process handlers, real PostgreSQL, profiles from memory\","
            + "\"parameters\":{\"users\":\(parameters.users),\"friends\":\(parameters.friends),"
            + "\"seconds\":\(parameters.seconds),\"concurrency\":\(parameters.concurrency),\"rounds\":\(parameters.rounds)},"
            + "\"results\":[\(entries.joined(separator: ","))]}\n"
    }
}
