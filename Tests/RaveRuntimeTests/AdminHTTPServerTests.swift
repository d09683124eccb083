import Foundation
import Glibc
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@testable import RaveRuntime

@Suite struct AdminHTTPServerTests {
    /// A running admin server on a free loopback port, torn down by `stop()`.
    struct Harness {
        let group: EventLoopGroup
        let server: AdminHTTPServer
        let running: Task<Void, any Error>
        let port: Int
        let metrics: MetricsRegistry
        let readiness: ReadinessChecks

        /// `startupFinished: false` leaves the process starting, as a runtime is until every port is bound.
        static func start(shuttingDown: Bool = false, startupFinished: Bool = true) throws -> Harness {
            let group = try EventLoopGroup(loopCount: 1)
            let metrics = MetricsRegistry()
            let readiness = ReadinessChecks(timeout: .milliseconds(300))
            if startupFinished { readiness.finishStartup() }
            let server = AdminHTTPServer(
                address: SocketAddress(host: "127.0.0.1", port: 0), group: group, metrics: metrics,
                readiness: readiness, isShuttingDown: { shuttingDown },
                logger: Logger(label: "admin", sink: .capturing()))
            let port = try server.bind()
            let running = Task { try await server.run() }
            return Harness(
                group: group, server: server, running: running, port: port, metrics: metrics, readiness: readiness)
        }

        func stop() async throws {
            await server.shutdown()
            try await running.value
            group.shutdown()
        }

        /// Sends `request` on a fresh connection and reads until the server closes it.
        func exchange(_ request: String) async throws -> String {
            let port = self.port
            return try await onOwnThread {
                let socket = try TestSocket(port: port)
                defer { socket.close() }
                try socket.send(request)
                return socket.readUntilClosed()
            }
        }
    }

    @Test func healthzAnswersOk() async throws {
        let harness = try Harness.start()
        let response = try await harness.exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try await harness.stop()
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.contains("Content-Length: 3\r\n"))
        #expect(response.hasSuffix("\r\n\r\nok\n"))
    }

    @Test func metricsServesThePrometheusText() async throws {
        let harness = try Harness.start()
        harness.metrics.counter("rpc_server_requests_total", help: "Requests.", labels: [("rpc.status", "OK")])
            .increment(by: 3)
        let response = try await harness.exchange("GET /metrics HTTP/1.0\r\n\r\n")
        try await harness.stop()
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
        #expect(response.contains("# TYPE rpc_server_requests_total counter\n"))
        #expect(response.contains("rpc_server_requests_total{rpc_status=\"OK\"} 3\n"))
    }

    @Test func metricsAreRenderedOffTheEventLoops() async throws {
        let harness = try Harness.start()
        let renderedOnALoop = Mutex<Bool?>(nil)
        let loops = harness.group.loops
        harness.metrics.gauge("probe", help: "Where the exposition is rendered.") {
            renderedOnALoop.withLock { $0 = loops.contains { $0.isInLoop } }
            return 1
        }
        let response = try await harness.exchange("GET /metrics HTTP/1.0\r\n\r\n")
        try await harness.stop()
        #expect(response.contains("probe 1\n"))
        #expect(renderedOnALoop.withLock { $0 } == false)
    }

    @Test func connectionsBeyondTheLimitAreClosedAtOnce() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        let readiness = ReadinessChecks()
        readiness.finishStartup()
        let server = AdminHTTPServer(
            address: SocketAddress(host: "127.0.0.1", port: 0), group: group, readiness: readiness,
            logger: Logger(label: "admin", sink: .capturing()), maxConnections: 2)
        let port = try server.bind()
        let running = Task { try await server.run() }
        let held = try await onOwnThread { try (0..<2).map { _ in try TestSocket(port: port) } }
        // The third connection is accepted by the kernel and closed by the server without an answer.
        let answer = try await onOwnThread {
            let socket = try TestSocket(port: port)
            defer { socket.close() }
            try socket.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return socket.readUntilClosed()
        }
        #expect(answer.isEmpty)
        for socket in held { socket.close() }
        await server.shutdown()
        try await running.value
        group.shutdown()
    }

    @Test func readyzIsOkWhenEveryCheckPasses() async throws {
        let harness = try Harness.start()
        harness.readiness.add("database") { nil }
        harness.readiness.add("migrations", throwing: {})
        let response = try await harness.exchange("GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try await harness.stop()
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.hasSuffix("database: ok\nmigrations: ok\n"))
    }

    @Test(.timeLimit(.minutes(1))) func readyzNamesTheFailingCheck() async throws {
        let harness = try Harness.start()
        harness.readiness.add("database") { "connection refused on 127.0.0.1:55432" }
        harness.readiness.add("migrations") { nil }
        harness.readiness.add("hung") {
            try? await Task.sleep(for: .seconds(30))
            return nil
        }
        // The hung check would answer "ok" after 30 s: its line says the check's timeout cut it off instead.
        let response = try await harness.exchange("GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try await harness.stop()
        #expect(response.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"))
        #expect(response.contains("database: connection refused on 127.0.0.1:55432\n"))
        #expect(response.contains("migrations: ok\n"))
        #expect(response.contains("hung: did not answer within 0.3 seconds\n"))
    }

    @Test func readyzFailsUntilStartupIsFinishedEvenWithoutChecks() async throws {
        let harness = try Harness.start(startupFinished: false)
        let starting = try await harness.exchange("GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        harness.readiness.add("database") { nil }
        let stillStarting = try await harness.exchange("GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        harness.readiness.finishStartup()
        let started = try await harness.exchange("GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try await harness.stop()
        #expect(starting.hasPrefix("HTTP/1.1 503 "))
        #expect(starting.hasSuffix("startup: ports and checks are still being set up\n"))
        #expect(stillStarting.hasPrefix("HTTP/1.1 503 "))
        #expect(stillStarting.contains("database: ok\n"))
        #expect(started.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(started.hasSuffix("\r\n\r\ndatabase: ok\n"))
    }

    @Test func readyzFailsWhileShuttingDown() async throws {
        let harness = try Harness.start(shuttingDown: true)
        let response = try await harness.exchange("GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try await harness.stop()
        #expect(response.hasPrefix("HTTP/1.1 503 "))
        #expect(response.hasSuffix("shutting down\n"))
    }

    @Test func unknownPathIsNotFound() async throws {
        let harness = try Harness.start()
        let response = try await harness.exchange("GET /admin/secrets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try await harness.stop()
        #expect(response.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
    }

    @Test func otherMethodsAreNotAllowedAndHeadHasNoBody() async throws {
        let harness = try Harness.start()
        let delete = try await harness.exchange("DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let head = try await harness.exchange("HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try await harness.stop()
        #expect(delete.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"))
        #expect(delete.contains("Allow: GET, HEAD\r\n"))
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("Content-Length: 3\r\n"))
        #expect(head.hasSuffix("\r\n\r\n"))
    }

    @Test func aProbeWithoutHostIsAnswered() async throws {
        let harness = try Harness.start()
        let response = try await harness.exchange("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
        try await harness.stop()
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    @Test func malformedRequestIsBadRequestAndClosed() async throws {
        let harness = try Harness.start()
        let response = try await harness.exchange("GET /healthz\r\n\r\n")
        try await harness.stop()
        #expect(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(response.contains("Connection: close\r\n"))
    }

    @Test func oversizedHeadersAreRefused() async throws {
        let harness = try Harness.start()
        let filler = String(repeating: "x", count: 20_000)
        let response = try await harness.exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: \(filler)\r\n\r\n")
        try await harness.stop()
        #expect(response.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"))
    }

    @Test func keepAliveServesSeveralPipelinedRequestsInOrder() async throws {
        let harness = try Harness.start()
        harness.readiness.add("database") {
            try? await Task.sleep(for: .milliseconds(20))
            return nil
        }
        let response = try await harness.exchange(
            "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        try await harness.stop()
        let statuses = response.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("HTTP/1.1 ") }.map(String.init)
        #expect(statuses == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found"])
        #expect(response.contains("database: ok\n"))
    }
}

// MARK: - A plain blocking socket client

/// A blocking TCP client for tests, with a receive timeout so a silent server fails the test instead of hanging.
final class TestSocket: Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SystemCallError("socket", errno: errno) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw SystemCallError("connect", errno: code)
        }
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, 0) }
            if sent < 0 {
                // The server may answer and close before taking everything (oversized heads).
                if errno == EPIPE || errno == ECONNRESET { return }
                throw SystemCallError("send", errno: errno)
            }
            offset += sent
        }
    }

    func readUntilClosed() -> String {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += chunk[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    func close() {
        Glibc.close(fd)
    }
}

/// Runs blocking work on a thread of its own, so it never ties up the cooperative pool the server's tasks need.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.start()
    }
}
