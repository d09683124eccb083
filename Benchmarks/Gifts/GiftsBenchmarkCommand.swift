import BenchmarkSupport
import Foundation
import Gifts
import RavePostgres
import RaveTransport

/// `rave-bench gifts`: runs `GiftsBenchmark` against the scratch database `RAVE_DATABASE_URL`.
///
/// `RAVE_BENCH_USERS` (default 10000), `RAVE_BENCH_ACCEPT_GIFTS` (150000), `RAVE_BENCH_SECONDS` (5) and
/// `RAVE_BENCH_CONCURRENCY` (32) tune it; results go to stdout and `.bench/gifts.json` (or `RAVE_BENCH_OUT`).
/// Exits non-zero when a call failed.
package enum GiftsBenchmarkCommand {
    package static func run(environment: [String: String]) async -> Int32 {
        guard let url = environment["RAVE_DATABASE_URL"] else {
            print("rave-bench gifts: set RAVE_DATABASE_URL to a scratch database (it is migrated and filled)")
            return 64
        }
        var parameters = GiftsBenchmark.Parameters()
        if let users = environment["RAVE_BENCH_USERS"].flatMap(Int.init) { parameters.users = max(100, users) }
        parameters.listUsers = min(parameters.listUsers, parameters.users)
        if let gifts = environment["RAVE_BENCH_ACCEPT_GIFTS"].flatMap(Int.init) {
            parameters.acceptGifts = max(1_000, gifts)
        }
        if let seconds = environment["RAVE_BENCH_SECONDS"].flatMap(Double.init) { parameters.seconds = seconds }
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
            _ = try await Migrator(pool: pool, directory: GiftsMain.migrationsDirectory).migrate()
            let measurements = try await GiftsBenchmark(pool: pool, parameters: parameters).run()
            print(measurements.map { $0.summaryLine(concurrency: parameters.concurrency) }.joined(separator: "\n"))
            let path = environment["RAVE_BENCH_OUT"] ?? ".bench/gifts.json"
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try json(measurements, parameters: parameters).write(toFile: path, atomically: true, encoding: .utf8)
            return measurements.allSatisfy { $0.errors == 0 } ? 0 : 1
        } catch {
            print("rave-bench gifts failed: \(error)")
            return 1
        }
    }

    /// The machine-readable results `make bench` collects.
    static func json(_ measurements: [BenchmarkMeasurement], parameters: GiftsBenchmark.Parameters) -> String {
        let entries = measurements.map(\.jsonObject)
        return "{\"benchmark\":\"gifts\",\"mode\":\"in-process handlers, real PostgreSQL, users from memory\","
            + "\"parameters\":{\"users\":\(parameters.users),\"accept_gifts\":\(parameters.acceptGifts),"
            + "\"seconds\":\(parameters.seconds),\"concurrency\":\(parameters.concurrency)},"
            + "\"results\":[\(entries.joined(separator: ","))]}\n"
    }
}
