import Foundation
import RavePostgres

#if canImport(Glibc)
import Glibc
import RaveTestSupport
#endif

/// A PostgreSQL cluster of the test's own (initdb in a temporary directory, a free loopback port), for tests
/// that stop or restart the server and so must not touch the shared one.
///
/// Mirrors scripts/with-postgres.sh: as root the server runs as `postgres` through `runuser`, since it refuses
/// to run as root. Call `destroy()` when done; it stops the server and removes the directory.
final class TemporaryCluster: Sendable {
    let directory: String
    let port: Int
    let user: String
    private let binaries: String
    private let runAs: [String]

    /// A superuser URL for database `postgres`.
    var url: String { "postgresql://\(user)@127.0.0.1:\(port)/postgres" }

    private init(directory: String, port: Int, user: String, binaries: String, runAs: [String]) {
        self.directory = directory
        self.port = port
        self.user = user
        self.binaries = binaries
        self.runAs = runAs
    }

    /// Creates and starts a new cluster.
    static func start() throws -> TemporaryCluster {
        let binaries = try serverBinaries()
        var buffer = Array("/tmp/rave-pg-test.XXXXXX".utf8CString)
        guard mkdtemp(&buffer) != nil else { throw ClusterError("mkdtemp failed: errno \(errno)") }
        let directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        chmod(directory, 0o755)
        let isRoot = getuid() == 0
        if isRoot { try run(["/bin/chown", "postgres:", directory]) }
        let cluster = TemporaryCluster(
            directory: directory, port: try LoopbackPort.unused(), user: isRoot ? "postgres" : currentUserName(),
            binaries: binaries, runAs: isRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : [])
        do {
            try cluster.runServerTool(
                "initdb", ["-D", cluster.dataDirectory, "-U", cluster.user, "-A", "trust", "-E", "UTF8", "--no-locale"])
            try cluster.startServer()
        } catch {
            cluster.destroy()
            throw error
        }
        return cluster
    }

    var dataDirectory: String { directory + "/data" }

    /// Starts the server and waits until it accepts connections.
    func startServer() throws {
        let options =
            "-c listen_addresses=127.0.0.1 -c port=\(port) -c unix_socket_directories=\(directory) "
            + "-c max_connections=100 -c fsync=off"
        try runServerTool(
            "pg_ctl", ["-D", dataDirectory, "-l", directory + "/server.log", "-w", "-t", "60", "start", "-o", options])
    }

    /// Stops the server; `immediate` kills backends without a clean shutdown, like a crash.
    func stopServer(immediate: Bool = false) throws {
        try runServerTool("pg_ctl", ["-D", dataDirectory, "-m", immediate ? "immediate" : "fast", "-w", "stop"])
    }

    /// Stops the server (if running) and removes its directory.
    func destroy() {
        try? runServerTool("pg_ctl", ["-D", dataDirectory, "-m", "immediate", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func runServerTool(_ tool: String, _ arguments: [String]) throws {
        try Self.run(runAs + [binaries + "/" + tool] + arguments)
    }

    // MARK: - Process helpers

    /// Runs `command` and waits for it.
    private static func run(_ command: [String]) throws {
        // A file, not a pipe: the server pg_ctl starts would inherit a pipe and keep it open.
        let outputPath = NSTemporaryDirectory() + "rave-pg-tool-" + UUID().uuidString + ".log"
        defer { unlink(outputPath) }
        let ended = try ChildProcess.start(
            command[0], Array(command.dropFirst()), output: .file(outputPath), errors: .standardOutput
        ).wait()
        guard ended == .exited(0) else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw ClusterError("\(command.joined(separator: " ")) failed (\(ended)): \(text)")
        }
    }

    private static func serverBinaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let sorted = versions.compactMap { Int($0) }.sorted()
        guard let newest = sorted.last else { throw ClusterError("no PostgreSQL server under \(root)") }
        return "\(root)/\(newest)/bin"
    }

    private static func currentUserName() -> String {
        getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "postgres"
    }
}

/// A cluster could not be created, started or stopped; the message carries the tool's output.
struct ClusterError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
