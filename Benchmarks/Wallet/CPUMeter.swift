import Foundation
import RavePostgres

/// CPU seconds spent so far by this process and by the database server's processes.
///
/// Throughput on the shared 2-core machines swings with other people's builds; CPU time per bet does not, so
/// `rave-bench wallet` reports it for each measurement. The server's processes are the ones `pg_stat_activity` lists
/// (backends and background workers such as the WAL writer), read from `/proc`, so the server must run on this
/// host; Linux only.
struct CPUTime: Sendable {
    var process: Double
    var database: Double

    /// Per-process figures of the database, so a process seen only in the later sample counts from zero.
    fileprivate var databaseByPID: [Int32: Double]

    static func - (later: CPUTime, earlier: CPUTime) -> CPUTime {
        var database = 0.0
        for (pid, seconds) in later.databaseByPID { database += seconds - (earlier.databaseByPID[pid] ?? 0) }
        return CPUTime(process: later.process - earlier.process, database: database, databaseByPID: [:])
    }

    /// "wallet 41 µs + postgres 180 µs = 221 µs CPU per bet".
    func perBetLine(bets: Int) -> String {
        guard bets > 0 else { return "no bets" }
        let wallet = Int((process / Double(bets) * 1e6).rounded())
        let server = Int((database / Double(bets) * 1e6).rounded())
        return "wallet \(wallet) µs + postgres \(server) µs = \(wallet + server) µs CPU per bet"
    }

    var jsonObject: String {
        "{\"wallet_cpu_seconds\":\((process * 1000).rounded() / 1000),"
            + "\"postgres_cpu_seconds\":\((database * 1000).rounded() / 1000)}"
    }

    /// Samples this process (getrusage) and every server process `pool` can see.
    static func now(database pool: PostgresPool) async throws -> CPUTime {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let process =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        var byPID: [Int32: Double] = [:]
        for row in try await pool.query(PostgresQuery("SELECT pid FROM pg_stat_activity")) {
            let pid = try row.decode(Int32.self, at: 0)
            if let seconds = processSeconds(pid) { byPID[pid] = seconds }
        }
        return CPUTime(process: process, database: byPID.values.reduce(0, +), databaseByPID: byPID)
    }

    /// utime + stime of `/proc/<pid>/stat` (fields 14 and 15, counted after the parenthesised command name).
    private static func processSeconds(_ pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After ")": state is field 3 of the file, so utime (14) and stime (15) are at offsets 11 and 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
