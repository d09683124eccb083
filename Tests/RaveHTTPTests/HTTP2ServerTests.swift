import Foundation
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

@testable import RaveHTTP

/// HTTP/2 (ALPN `h2`) on a real TLS port, driven by the clients of the field: curl and nghttp (nghttp2-client).
@Suite(
    .enabled(if: ExternalCommand.isInstalled("/usr/bin/curl") && ExternalCommand.isInstalled("/usr/bin/nghttp")),
    .timeLimit(.minutes(2)))
struct HTTP2ServerTests {
    /// `/slow` waits for the test (counting how many wait at once), `/echo` answers the body, `/big` 1 MiB; on the
    /// loop, `/now` at once, `/later` on a later turn of the loop, `/declined` by declining (then off the loop).
    final class Responder: HTTPResponder {
        struct Counts {
            var waiting = 0
            var mostWaiting = 0
            var answered = 0
            var refused = 0
        }

        let counts = Mutex(Counts())
        let release = Gate()
        static let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }

        func answer(_ request: HTTPServerRequest, from connection: HTTPConnectionInfo) -> HTTPAnswer {
            switch request.path {
            case "/slow":
                return .deferred { [self] in
                    counts.withLock { counts in
                        counts.waiting += 1
                        counts.mostWaiting = max(counts.mostWaiting, counts.waiting)
                    }
                    await release.wait()
                    counts.withLock { counts in
                        counts.waiting -= 1
                        counts.answered += 1
                    }
                    return HTTPServerResponse(status: .ok, contentType: "text/plain", text: "slow")
                }
            case "/echo":
                let text = "\(request.version) \(request.method) \(request.header("host") ?? "-") "
                return .immediate(
                    HTTPServerResponse(
                        status: .ok, headers: [HTTPHeader(name: "Content-Type", value: "text/plain")],
                        body: Array(text.utf8) + request.body))
            case "/big":
                return .immediate(HTTPServerResponse(status: .ok, body: Self.big))
            case "/now":
                return .onLoop(
                    start: { _, respond in
                        respond(HTTPServerResponse(status: .ok, contentType: "text/plain", text: "now"))
                        return {}
                    }, otherwise: { HTTPServerResponse(status: .internalServerError) })
            case "/later":
                return .onLoop(
                    start: { loop, respond in
                        let later = LoopConfined(respond)
                        loop.execute {
                            later.value(HTTPServerResponse(status: .ok, contentType: "text/plain", text: "later"))
                        }
                        return {}
                    }, otherwise: { HTTPServerResponse(status: .internalServerError) })
            case "/declined":
                return .onLoop(
                    start: { _, _ in nil },
                    otherwise: { HTTPServerResponse(status: .ok, contentType: "text/plain", text: "otherwise") })
            default:
                return .immediate(HTTPServerResponse(status: .notFound, contentType: "text/plain", text: "no"))
            }
        }

        func answer(_ error: HTTPParseError, from connection: HTTPConnectionInfo) -> HTTPServerResponse {
            if error.status == .serviceUnavailable { counts.withLock { $0.refused += 1 } }
            return HTTPServerResponse(status: error.status, contentType: "text/plain", text: error.reason)
        }
    }

    /// A value used on one event loop only, carried through a `loop.execute` back to that loop.
    final class LoopConfined<Value>: @unchecked Sendable {
        // @unchecked: created on the loop and read in a closure that loop runs.
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    /// A TLS server offering `h2` and `http/1.1`, with development certificates.
    struct Server {
        let directory: String
        let group: EventLoopGroup
        let server: HTTPServer
        let responder: Responder

        var url: String { "https://127.0.0.1:\(server.localPort)" }

        static func start(maxBufferedInput: Int? = nil) throws -> Server {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-h2-\(UUID())").path
            try DevelopmentCertificates.write(to: directory, services: ["gateway"])
            var tls = TLSConfiguration.server(
                certificateChainPath: "\(directory)/gateway.pem", privateKeyPath: "\(directory)/gateway-key.pem")
            tls.applicationProtocols = ["h2", "http/1.1"]
            let group = try EventLoopGroup(loopCount: 1)
            let responder = Responder()
            var settings = HTTPServerSettings(
                limits: HTTPLimits(maxHeadBytes: 16 << 10, maxHeaderCount: 100, maxBodyBytes: 4096))
            if let maxBufferedInput { settings.maxBufferedInput = maxBufferedInput }
            let server = try HTTPServer(
                group: group, host: "127.0.0.1", port: 0, tls: try TLSContext(tls),
                admission: ConnectionAdmission(limits: ConnectionLimits()), settings: settings, responder: responder)
            return Server(directory: directory, group: group, server: server, responder: responder)
        }

        func stop() async {
            responder.release.open()
            await server.drain(gracePeriod: .seconds(5))
            group.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }

        func curl(_ arguments: [String]) async throws -> ExternalCommand.Outcome {
            try await ExternalCommand.run(
                "/usr/bin/curl", ["--cacert", "\(directory)/ca.pem", "--silent", "--show-error"] + arguments)
        }
    }

    @Test func curlSpeaksHTTP2AndGetsTheSameAnswersAsHTTP1() async throws {
        let server = try Server.start()
        let h2 = try await server.curl(
            ["--http2", "--data-binary", "body", "--write-out", "|%{http_code}|%{http_version}", server.url + "/echo"])
        let h1 = try await server.curl(
            [
                "--http1.1", "--data-binary", "body", "--write-out", "|%{http_code}|%{http_version}",
                server.url + "/echo",
            ])
        let missing = try await server.curl(["--http2", "--write-out", "|%{http_code}", server.url + "/nope"])
        await server.stop()
        #expect(h2.status == 0, "\(h2.errors)")
        #expect(h2.output == "HTTP/2 POST 127.0.0.1:\(server.server.localPort) body|200|2")
        #expect(h1.output == "HTTP/1.1 POST 127.0.0.1:\(server.server.localPort) body|200|1.1")
        #expect(missing.output == "no|404")
    }

    @Test func answersOnTheLoopAreSentOnTheirStreams() async throws {
        let server = try Server.start()
        var arguments: [String] = []
        for path in ["/now", "/later", "/declined"] {
            if !arguments.isEmpty { arguments += ["--next", "--cacert", "\(server.directory)/ca.pem", "--silent"] }
            arguments += ["--http2", "--write-out", "|%{http_code}|%{http_version};", server.url + path]
        }
        let outcome = try await server.curl(arguments)
        await server.stop()
        #expect(outcome.output == "now|200|2;later|200|2;otherwise|200|2;", "\(outcome.errors)")
    }

    @Test func aLargeResponseCrossesFlowControl() async throws {
        let server = try Server.start()
        let outcome = try await server.curl(
            ["--http2", "--output", "/dev/null", "--write-out", "%{http_code} %{size_download}", server.url + "/big"])
        await server.stop()
        #expect(outcome.output == "200 \(1 << 20)", "\(outcome.errors)")
    }

    @Test func aBodyOverTheLimitIs413OnItsStreamOnly() async throws {
        let server = try Server.start()
        let outcome = try await server.curl([
            "--http2", "--data-binary", String(repeating: "x", count: 5000), "--write-out", "|%{http_code}",
            server.url + "/echo", "--next", "--http2", "--cacert", "\(server.directory)/ca.pem", "--silent",
            "--data-binary", "ok", "--write-out", "|%{http_code}", server.url + "/echo",
        ])
        await server.stop()
        #expect(outcome.output.contains("|413"), "\(outcome.output) \(outcome.errors)")
        #expect(outcome.output.hasSuffix("ok|200"), "\(outcome.output)")
    }

    @Test func drainingLetsAStreamUnderWayFinish() async throws {
        let server = try Server.start()
        let client = Task { try await server.curl(["--http2", "--write-out", "|%{http_code}", server.url + "/slow"]) }
        try await eventually { server.responder.counts.withLock { $0.waiting } == 1 }
        let drained = Task { await server.server.drain(gracePeriod: .seconds(30)) }
        server.responder.release.open()
        let outcome = try await client.value
        await drained.value
        #expect(server.server.openConnections == 0)
        await server.stop()
        #expect(outcome.output == "slow|200", "\(outcome.errors)")
    }

    @Test func theStreamsOfAConnectionHoldAtMostItsBodyBudget() async throws {
        let server = try Server.start(maxBufferedInput: 10_000)
        let body = server.directory + "/body"
        try Data(repeating: 0x61, count: 4000).write(to: URL(fileURLWithPath: body))
        // Ten 4000-byte bodies held at /slow: two fit the 10,000-byte budget, the others are refused.
        let client = Task {
            try await ExternalCommand.run(
                "/usr/bin/nghttp", ["--null-out", "--multiply=10", "--data=\(body)", server.url + "/slow"])
        }
        try await eventually {
            server.responder.counts.withLock { $0.waiting == 2 && $0.refused == 8 }
        }
        server.responder.release.open()
        _ = try await client.value
        let counts = server.responder.counts.withLock { $0 }
        await server.stop()
        #expect(counts.mostWaiting == 2)
        #expect(counts.answered == 2)
    }

    @Test func atMostOneHundredStreamsRunAtOnceOnAConnectionAndTheRestFollow() async throws {
        let server = try Server.start()
        // 150 requests on one connection; the answers wait until 100 of them are waiting at once.
        let client = Task {
            try await ExternalCommand.run("/usr/bin/nghttp", ["--null-out", "--multiply=150", server.url + "/slow"])
        }
        try await eventually(timeout: .seconds(30)) { server.responder.counts.withLock { $0.waiting } == 100 }
        server.responder.release.open()
        let outcome = try await client.value
        let counts = server.responder.counts.withLock { $0 }
        await server.stop()
        #expect(outcome.status == 0, "\(outcome.errors)")
        #expect(counts.mostWaiting == 100)
        #expect(counts.answered == 150)
    }
}
