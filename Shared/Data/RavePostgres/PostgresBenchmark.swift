import RaveCrypto
import RaveTelemetry
import RaveTransport
import Synchronization

/// Measures this client against a PostgreSQL server: prepared primary-key selects through the pool (comparable
/// with `pgbench -S`), pipelined single-row inserts (`executeMany`), and a binary COPY bulk load.
///
/// It creates its own tables (names with a random suffix) in the target database and drops them afterwards.
public struct PostgresBenchmark: Sendable {
    /// What to run; every field has a default that finishes in about `duration` plus a few seconds.
    public struct Configuration: Sendable, Codable {
        /// Connections (and closed-loop callers) for the select test (default 16, like `pgbench -c 16`).
        public var connections = 16
        /// How long the select test runs, in seconds (default 10).
        public var durationSeconds = 10.0
        /// Rows in the table the selects read (default 100,000).
        public var selectTableRows = 100_000
        /// Rows inserted by the pipeline test (default 200,000).
        public var pipelineRows = 200_000
        /// Inserts per pipeline sync (each batch is a transaction); several are in flight at once (default 1,000).
        public var pipelineBatchSize = 1_000
        /// Rows loaded by the COPY test (default 1,000,000).
        public var copyRows = 1_000_000
        /// Event loops the pool runs on (default: one per core).
        public var loopCount = System.coreCount

        public init() {}
    }

    /// Latency percentiles in microseconds.
    public struct Latency: Sendable, Codable, Hashable {
        public var p50: Double
        public var p90: Double
        public var p99: Double
        public var p999: Double
        public var max: Double
        public var mean: Double
    }

    /// The select test's outcome.
    public struct SelectResult: Sendable, Codable, Hashable {
        public var connections: Int
        public var seconds: Double
        public var selects: Int
        public var rowsPerSecond: Double
        public var latency: Latency
    }

    /// A bulk test's outcome.
    public struct LoadResult: Sendable, Codable, Hashable {
        public var rows: Int
        public var seconds: Double
        public var rowsPerSecond: Double
    }

    /// Everything one run measured, plus what it was asked to do.
    public struct Result: Sendable, Codable {
        public var configuration: Configuration
        public var selects: SelectResult
        public var pipelinedInserts: LoadResult
        public var copy: LoadResult
    }

    public let connectionString: String
    public let configuration: Configuration
    private let logger: Logger

    public init(
        connectionString: String, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "postgres-benchmark")
    ) {
        self.connectionString = connectionString
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs the three tests in turn and drops the tables it made, even when a test fails.
    public func run() async throws -> Result {
        let suffix = String(RaveID.random().description.filter { $0 != "-" }.prefix(12))
        let tables = Tables(
            accounts: "rave_bench_accounts_" + suffix, events: "rave_bench_events_" + suffix,
            copy: "rave_bench_copy_" + suffix)
        var poolConfiguration = PostgresPool.Configuration(connectionString: connectionString)
        poolConfiguration.size = configuration.connections
        poolConfiguration.loopCount = max(1, configuration.loopCount)
        poolConfiguration.acquireTimeout = .seconds(30)
        let pool = try PostgresPool(configuration: poolConfiguration, logger: logger)
        defer { pool.shutdown() }
        do {
            let result = try await runTests(pool, tables)
            try await dropTables(pool, tables)
            return result
        } catch {
            try? await dropTables(pool, tables)
            throw error
        }
    }

    private struct Tables {
        var accounts: String
        var events: String
        var copy: String
    }

    private func runTests(_ pool: PostgresPool, _ tables: Tables) async throws -> Result {
        try await pool.query(
            "CREATE TABLE \(tables.accounts) (id int8 PRIMARY KEY, balance int8 NOT NULL, note text NOT NULL)")
        try await pool.query(
            "INSERT INTO \(tables.accounts) SELECT n, n * 7, repeat('x', 84) FROM generate_series(1, $1) AS n",
            [configuration.selectTableRows])
        try await pool.query("VACUUM ANALYZE \(tables.accounts)")
        try await pool.query(
            "CREATE TABLE \(tables.events) (id int8 PRIMARY KEY, account int8 NOT NULL, amount int8 NOT NULL)")
        try await pool.query("CREATE TABLE \(tables.copy) (id uuid NOT NULL, points int8 NOT NULL, at timestamptz)")
        logger.info("selects", [("connections", "\(configuration.connections)")])
        let selects = try await measureSelects(pool, table: tables.accounts)
        logger.info("pipelined inserts", [("rows", "\(configuration.pipelineRows)")])
        let inserts = try await measurePipelinedInserts(pool, table: tables.events)
        logger.info("copy", [("rows", "\(configuration.copyRows)")])
        let copy = try await measureCopy(pool, table: tables.copy)
        return Result(configuration: configuration, selects: selects, pipelinedInserts: inserts, copy: copy)
    }

    private func dropTables(_ pool: PostgresPool, _ tables: Tables) async throws {
        try await pool.query("DROP TABLE IF EXISTS \(tables.accounts), \(tables.events), \(tables.copy)")
    }

    // MARK: - Tests

    private func measureSelects(_ pool: PostgresPool, table: String) async throws -> SelectResult {
        let statement = PostgresStatement(
            name: "bench_select_" + table, sql: "SELECT balance FROM \(table) WHERE id = $1")
        let rowCount = configuration.selectTableRows
        // Open every connection and prepare the statement before the clock starts, as pgbench does.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<configuration.connections {
                group.addTask {
                    try await pool.withConnection { connection in
                        try await connection.execute(statement, [1])
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
            }
            try await group.waitForAll()
        }
        let duration = UInt64(configuration.durationSeconds * 1e9)
        let started = monotonicNanoseconds()
        let deadline = started + duration
        let latencies = try await withThrowingTaskGroup(of: [UInt32].self) { group in
            for worker in 0..<configuration.connections {
                group.addTask {
                    var samples: [UInt32] = []
                    samples.reserveCapacity(1 << 16)
                    var generator = SplitMix64(seed: UInt64(worker) &+ started)
                    var now = monotonicNanoseconds()
                    while now < deadline {
                        let id = Int(generator.next() % UInt64(rowCount)) + 1
                        let rows = try await pool.execute(statement, [id])
                        guard rows.count == 1 else {
                            throw PostgresError(.client, "benchmark row \(id) is missing")
                        }
                        let finished = monotonicNanoseconds()
                        samples.append(UInt32(clamping: (finished - now) / 1_000))
                        now = finished
                    }
                    return samples
                }
            }
            return try await group.reduce(into: [UInt32]()) { $0 += $1 }
        }
        let seconds = Double(monotonicNanoseconds() - started) / 1e9
        return SelectResult(
            connections: configuration.connections, seconds: seconds, selects: latencies.count,
            rowsPerSecond: Double(latencies.count) / seconds, latency: Self.summarize(latencies))
    }

    private func measurePipelinedInserts(_ pool: PostgresPool, table: String) async throws -> LoadResult {
        let total = configuration.pipelineRows
        let batchSize = max(1, configuration.pipelineBatchSize)
        let statement = PostgresStatement(
            name: "bench_insert_" + table, sql: "INSERT INTO \(table) (id, account, amount) VALUES ($1, $2, $3)")
        return try await pool.withConnection { connection in
            let started = monotonicNanoseconds()
            let rows = (0..<Int64(total)).lazy.map { id in (id, id % 1_000, Int64(5)) }
            let inserted = try await connection.executeMany(statement, rows: rows, batchSize: batchSize)
            let seconds = Double(monotonicNanoseconds() - started) / 1e9
            return LoadResult(rows: inserted, seconds: seconds, rowsPerSecond: Double(inserted) / seconds)
        }
    }

    private func measureCopy(_ pool: PostgresPool, table: String) async throws -> LoadResult {
        let total = configuration.copyRows
        let base = PostgresTimestamp.now().microsecondsSinceEpoch
        return try await pool.withConnection { connection in
            let started = monotonicNanoseconds()
            var generator = SplitMix64(seed: started)
            let copied = try await connection.copyFrom(table: table, columns: ["id", "points", "at"]) { writer in
                for index in 0..<total {
                    let id = RaveID(high: generator.next(), low: generator.next())
                    let at = PostgresTimestamp(microsecondsSinceEpoch: base + Int64(index))
                    writer.appendRow(id, Int64(index), at)
                }
            }
            let seconds = Double(monotonicNanoseconds() - started) / 1e9
            return LoadResult(rows: copied, seconds: seconds, rowsPerSecond: Double(copied) / seconds)
        }
    }

    static func summarize(_ samples: [UInt32]) -> Latency {
        guard !samples.isEmpty else { return Latency(p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0) }
        let sorted = samples.sorted()
        func at(_ quantile: Double) -> Double {
            Double(sorted[min(sorted.count - 1, Int(quantile * Double(sorted.count)))])
        }
        let mean = Double(sorted.reduce(0) { $0 + UInt64($1) }) / Double(sorted.count)
        return Latency(
            p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: Double(sorted.last ?? 0), mean: mean)
    }
}
