import Foundation
import RaveTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// One real service executable of the stack, started from the build directory with its own environment and log
/// file; kill -9 and restart are what the failure tests need, so both are plain methods.
final class StackProcess: @unchecked Sendable {
    // @unchecked: `process` is replaced only under `lock`; the other properties are immutable.
    let name: String
    let executable: URL
    let arguments: [String]
    let environment: [String: String]
    let adminPort: Int
    let logFile: URL
    private let lock = NSLock()
    private var process: ChildProcess?

    /// The directory the test bundle was built into, where SwiftPM also puts every executable product.
    static var buildDirectory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// Whether `name` has been built next to the test bundle (gifts, for instance, may not exist yet).
    static func isBuilt(_ name: String) -> Bool {
        FileManager.default.isExecutableFile(atPath: buildDirectory.appendingPathComponent(name).path)
    }

    /// `executable` defaults to `name`; a second replica of a service runs the same executable under another name.
    init(
        name: String, executable: String? = nil, arguments: [String] = [], environment: [String: String],
        adminPort: Int, logDirectory: URL
    ) {
        self.name = name
        self.executable = Self.buildDirectory.appendingPathComponent(executable ?? name)
        self.arguments = arguments
        // The test's own RAVE_* settings (RAVE_TEST_POSTGRES_URL, …) must not leak into a service's configuration.
        let inherited = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("RAVE_") }
        self.environment = inherited.merging(environment) { $1 }
        self.adminPort = adminPort
        self.logFile = logDirectory.appendingPathComponent("\(name).log")
    }

    /// Starts the executable, appending its stdout and stderr to `logFile`.
    func start() throws {
        let process = try ChildProcess.start(
            executable.path, arguments, environment: environment, output: .file(logFile.path),
            errors: .standardOutput)
        lock.withLock { self.process = process }
    }

    /// SIGKILL, then waits for the exit: no drain, exactly what a crash looks like to the rest of the stack.
    func kill() {
        lock.withLock({ self.process })?.kill()
    }

    /// SIGTERM, then waits for the exit: the drain a deployment's rolling update gives a process.
    func terminate() {
        guard let process = lock.withLock({ self.process }) else { return }
        process.signal(SIGTERM)
        process.wait()
    }

    var isRunning: Bool { lock.withLock { process?.isRunning ?? false } }

    /// How the process ended ("status 78", "signal 11"), for failure messages.
    var exitDescription: String {
        lock.withLock({ self.process })?.ended?.description ?? "still running"
    }

    /// The last `lines` lines of the log, for failure messages.
    func logTail(_ lines: Int = 30) -> String {
        let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// Polls `/readyz` until it answers 200, failing early when the process exits.
    func waitUntilReady(timeout: Duration = .seconds(60)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            guard isRunning else {
                throw StackError("\(name) exited during start-up (\(exitDescription)):\n\(logTail())")
            }
            if await Self.isReady(adminPort: adminPort) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw StackError("\(name) was not ready within \(timeout):\n\(logTail())")
    }

    /// One `GET /readyz` over a blocking loopback socket, run on a thread of its own (never on Swift's pool).
    static func isReady(adminPort: Int) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: httpStatus(port: adminPort, path: "/readyz") == 200)
            }
        }
    }

    private static func httpStatus(port: Int, path: String) -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { return nil }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return nil }
        var buffer = [UInt8](repeating: 0, count: 64)
        let received = recv(fd, &buffer, buffer.count, 0)
        guard received >= 12 else { return nil }
        // "HTTP/1.1 200 …": the status is the second word.
        return Int(String(decoding: buffer[9..<12], as: UTF8.self))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}

/// Why the stack could not be set up or a story could not go on.
struct StackError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
