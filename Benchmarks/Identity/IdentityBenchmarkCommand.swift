import BenchmarkSupport
import Foundation
import Identity
import RaveCrypto
import RavePostgres
import RaveTelemetry
import RaveTransport

/// `rave-bench identity`: runs `IdentityBenchmark` against the scratch database `RAVE_DATABASE_URL`.
///
/// `RAVE_BENCH_SECONDS` (default 5), `RAVE_BENCH_CONCURRENCY` (default 32), `RAVE_BENCH_OPERATIONS` (a
/// comma-separated subset of `IdentityBenchmark.operationNames`), `RAVE_BENCH_HANDLERS_ON_EVENT_LOOP` (true: calls
/// run on the event loops), `RAVE_BENCH_FLOOD_MULTIPLE` (default 10) and `RAVE_BENCH_FLOOD_HASHING` (`pool` or
/// `cooperative`) tune it, and identity's own settings apply (`RAVE_IDENTITY_PASSWORD_HASHERS`, …); results go to
/// stdout and `.bench/identity.json` (or `RAVE_BENCH_OUT`). Exits non-zero when a measured call failed (the
/// flood's refusals are its point, not failures).
package enum IdentityBenchmarkCommand {
    package static func run(environment: [String: String]) async -> Int32 {
        guard let url = environment["RAVE_DATABASE_URL"] else {
            print("rave-bench identity: set RAVE_DATABASE_URL to a scratch database (it is migrated and filled)")
            return 64
        }
        var parameters = IdentityBenchmark.Parameters()
        if let seconds = environment["RAVE_BENCH_SECONDS"].flatMap(Double.init) { parameters.seconds = seconds }
        if let concurrency = environment["RAVE_BENCH_CONCURRENCY"].flatMap(Int.init) {
            parameters.concurrency = max(1, concurrency)
        }
        if let names = environment["RAVE_BENCH_OPERATIONS"], !names.isEmpty {
            parameters.operations = Set(names.split(separator: ",").map(String.init))
            let unknown = parameters.operations.subtracting(IdentityBenchmark.operationNames)
            guard unknown.isEmpty else {
                print(
                    "rave-bench identity: unknown operations \(unknown.sorted()); known: \(IdentityBenchmark.operationNames.sorted())"
                )
                return 64
            }
        }
        parameters.floodMultiple = environment["RAVE_BENCH_FLOOD_MULTIPLE"].flatMap(Double.init) ?? 10
        parameters.floodHashing = environment["RAVE_BENCH_FLOOD_HASHING"] ?? "pool"
        guard ["pool", "cooperative"].contains(parameters.floodHashing) else {
            print("rave-bench identity: RAVE_BENCH_FLOOD_HASHING must be pool or cooperative")
            return 64
        }
        do {
            let group = try EventLoopGroup(loopCount: 2)
            defer { group.shutdown() }
            var configuration = PostgresPool.Configuration(connectionString: url)
            configuration.size = 16
            let pool = try PostgresPool(configuration: configuration, group: group)
            defer { pool.shutdown() }
            _ = try await Migrator(pool: pool, directory: IdentityMain.migrationsDirectory).migrate()
            // A scratch database: a key that lives as long as the run seals its secrets.
            let secretKeys = try SecretKeyRing(entries: [.init(id: "bench", key: SymmetricKey())])
            let service = try await IdentityDependencies.start(
                pool: pool, environment: environment, secretKeys: secretKeys)
            if environment["RAVE_BENCH_HANDLERS_ON_EVENT_LOOP"] == "true" { parameters.loops = group.loops }
            let results = try await IdentityBenchmark(service: service, parameters: parameters).run()
            print(IdentityBenchmark.summary(results, parameters: parameters))
            let path = environment["RAVE_BENCH_OUT"] ?? ".bench/identity.json"
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try IdentityBenchmark.json(results, parameters: parameters).write(
                toFile: path, atomically: true, encoding: .utf8)
            return results.measurements.allSatisfy { $0.errors == 0 } ? 0 : 1
        } catch {
            print("rave-bench identity failed: \(error)")
            return 1
        }
    }
}
