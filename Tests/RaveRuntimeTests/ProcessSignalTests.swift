import Foundation
import RaveMessages
import RaveRPC
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Testing

/// The real `ravectl serve-echo` executable, stopped with SIGTERM while it works.
@Suite("Process signals", .timeLimit(.minutes(1)))
struct ProcessSignalTests {
    @Test func sigtermFinishesTheCallInFlightRefusesNewWorkAndExitsZero() async throws {
        let certificates = NSTemporaryDirectory() + "rave-signal-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        try DevelopmentCertificates.write(to: certificates, services: ["echo"])
        let port = try freeLoopbackPort()
        let server = try LoggedChild.start(
            executable: try LoggedChild.siblingExecutable("ravectl"),
            arguments: [
                "serve-echo", "--listen", "127.0.0.1:\(port)", "--cert", "\(certificates)/echo.pem", "--key",
                "\(certificates)/echo-key.pem",
            ])
        defer { server.killIfRunning() }
        try await server.waitForLogLine(containing: "listening")
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let tls = try TLSContext(.client(trustRootsPath: "\(certificates)/ca.pem"))
        func connect() async throws(RPCError) -> RPCConnection {
            try await RPCConnection.connect(
                host: "127.0.0.1", port: port, tls: tls, group: group, logger: Logger(label: "test", level: .error))
        }

        let connection = try await connect()
        #expect(try await echo(connection, payload: [7], delayMs: 0) == [7])
        let slowCall = Task { try await echo(connection, payload: [1, 2, 3], delayMs: 500) }
        try await Task.sleep(for: .milliseconds(100))
        server.signal(SIGTERM)

        // The listener closes first, so a refused connection shows the drain has begun.
        var refused = false
        for _ in 0..<100 {
            do {
                let late = try await connect()
                late.close()
            } catch {
                #expect(error.code == .unavailable)
                refused = true
                break
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(refused, "new connections were still accepted after SIGTERM")
        do {
            _ = try await echo(connection, payload: [9], delayMs: 0)
            Issue.record("a call on the draining connection was accepted")
        } catch let error as RPCError {
            #expect(error.code == .unavailable && error.notProcessed)
        }
        #expect(try await slowCall.value == [1, 2, 3])
        let status = try await server.waitForExit(within: .seconds(15))
        #expect(status == 0, "ravectl serve-echo exited with \(status); its log:\n\(server.log)")
        connection.close()
    }

    /// Calls Echo/EchoAfterDelay and returns the echoed payload.
    private func echo(_ connection: RPCConnection, payload: [UInt8], delayMs: UInt32) async throws -> [UInt8] {
        let request = EchoV1.EchoAfterDelayRequest(payload: payload, delayMs: delayMs)
        let response = try await connection.call(
            method: "rave.echo.v1.Echo/EchoAfterDelay", request: request.protobufBytes(),
            options: CallOptions(timeout: .seconds(10), maxRetries: 0))
        return try EchoV1.EchoResponse(protobufBytes: response).payload
    }
}

/// A child process whose standard error goes to a temporary file the test can read.
final class LoggedChild: Sendable {
    private let process: ChildProcess
    private let logPath: String

    private init(process: ChildProcess, logPath: String) {
        self.process = process
        self.logPath = logPath
    }

    /// An executable built into the same directory as the test bundle (`.build/debug/ravectl`).
    static func siblingExecutable(_ name: String) throws -> String {
        let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let path = bundle.deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("\(path) is missing; build it first (swift build --build-tests builds every product)")
        }
        return path
    }

    static func start(executable: String, arguments: [String]) throws -> LoggedChild {
        let logPath = NSTemporaryDirectory() + "rave-child-\(UUID().uuidString).log"
        let process = try ChildProcess.start(executable, arguments, errors: .file(logPath))
        return LoggedChild(process: process, logPath: logPath)
    }

    func signal(_ signal: Int32) { process.signal(signal) }

    /// Everything the process wrote to standard error so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Returns once the process logged a line containing `text`.
    func waitForLogLine(containing text: String, within limit: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if log.contains(text) { return }
            guard process.isRunning else { throw TestFailure("the process exited early; its log:\n\(log)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("the process did not log \"\(text)\" within \(limit); its log:\n\(log)")
    }

    /// The exit status, once the process ended.
    func waitForExit(within limit: Duration) async throws -> Int32 {
        try await process.wait(within: limit).status
    }

    func killIfRunning() {
        process.kill()
        try? FileManager.default.removeItem(atPath: logPath)
    }
}

/// A loopback port that was free a moment ago: the kernel picks it for a socket we close at once.
///
/// ravectl takes only fixed ports, so a small race with other processes remains; the kernel hands out
/// ephemeral ports round-robin, which makes an immediate reuse unlikely.
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard bound else { throw TestFailure("bind() to 127.0.0.1:0 failed: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A test precondition that did not hold, with what to do about it.
struct TestFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
