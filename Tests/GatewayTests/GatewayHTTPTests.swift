import Foundation
import RaveMessages
import RaveRPC
import RaveTestSupport
import RaveTransport
import Testing

@testable import Gateway

/// The HTTP/JSON front door end to end: a gateway in-process with its stand-in backends, real TLS sockets on
/// loopback, requests written byte for byte (docs/gateway.md, "HTTP/JSON front door").
@Suite("Gateway HTTP front door", .timeLimit(.minutes(3)))
struct GatewayHTTPTests {
    /// Runs `body` with a started harness and stops it afterwards.
    static func with(
        _ settings: [String: String] = [:], _ body: (GatewayHarness) async throws -> Void
    ) async throws {
        let harness = try await GatewayHarness.start(settings)
        do {
            try await body(harness)
        } catch {
            try await harness.stop()
            throw error
        }
        try await harness.stop()
    }

    static let echo = "/v1/rave.echo.v1.Echo/Echo"
    /// "whoami" in base64: the stand-in echo answers with the caller it saw.
    static let whoami = #"{"payload": "d2hvYW1p"}"#

    /// The text of an echo response's payload.
    static func payload(_ response: TestHTTPResponse) -> String? {
        guard let base64 = response.json?["payload"] as? String, let data = Data(base64Encoded: base64) else {
            return nil
        }
        return String(decoding: data, as: UTF8.self)
    }

    @Test func aJSONCallReachesTheServiceAsTheTokensCaller() async throws {
        try await Self.with { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            // The test client offers only http/1.1; the port offers h2 first to clients that speak it.
            #expect(connection.applicationProtocol == "http/1.1")
            let token = try harness.token(for: "user-1")
            let response = try await connection.post(
                Self.echo, json: Self.whoami, headers: ["Authorization": "Bearer \(token)", "X-Request-Id": "trace-1"])
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.header("X-Request-Id") == "trace-1")
            #expect(response.header("Cache-Control") == "no-store")
            #expect(Self.payload(response) == "user-1|app-1|session-user-1|player|127.0.0.1|-")
        }
    }

    @Test func theSameCallInProtobuf() async throws {
        try await Self.with { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let token = try harness.token(for: "user-2")
            let response = try await connection.request(
                "POST", Self.echo,
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/x-protobuf"],
                body: EchoV1.EchoRequest(payload: Array("whoami".utf8)).protobufBytes())
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/x-protobuf")
            let echoed = try EchoV1.EchoResponse(protobufBytes: response.body)
            #expect(String(decoding: echoed.payload, as: UTF8.self).hasPrefix("user-2|app-1|"))
        }
    }

    // MARK: - Error classes

    @Test func eachErrorClassHasItsStatusAndBody() async throws {
        try await Self.with { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let token = try harness.token(for: "user-3")

            let unauthenticated = try await connection.post(Self.echo, json: "{}")
            #expect(unauthenticated.status == 401)
            #expect(unauthenticated.json?["status"] as? String == "UNAUTHENTICATED")
            #expect(unauthenticated.json?["code"] as? Int == 16)

            let admin = try await connection.post("/v1/rave.identity.v1.IdentityAdmin/CreatePublisher", json: "{}")
            #expect(admin.status == 403)
            #expect(admin.json?["status"] as? String == "PERMISSION_DENIED")

            let unknown = try await connection.post("/v1/rave.echo.v1.Echo/Nope", json: "{}")
            #expect(unknown.status == 404)
            #expect(unknown.json?["status"] as? String == "NOT_FOUND")

            let badField = try await connection.post(
                Self.echo, json: #"{"payload": "aGk=", "colour": "red"}"#, headers: ["Authorization": "Bearer \(token)"]
            )
            #expect(badField.status == 400)
            #expect((badField.json?["message"] as? String)?.contains("colour") == true)

            let badJSON = try await connection.post(
                Self.echo, json: "{nope", headers: ["Authorization": "Bearer \(token)"])
            #expect(badJSON.status == 400)

            let mediaType = try await connection.post(
                Self.echo, json: "payload=x", headers: ["Content-Type": "text/plain"])
            #expect(mediaType.status == 415)

            let failedPrecondition = try await connection.post(
                "/v1/rave.echo.v1.Echo/Fail", json: #"{"code": "FAILED_PRECONDITION", "message": "not yet"}"#,
                headers: ["Authorization": "Bearer \(token)"])
            #expect(failedPrecondition.status == 400)
            #expect(failedPrecondition.json?["message"] as? String == "not yet")

            let serviceDown = try await connection.post(
                "/v1/rave.social.v1.Social/ListFriendRequests", json: "{}",
                headers: ["Authorization": "Bearer \(token)"])
            #expect(serviceDown.status == 503)
            #expect(serviceDown.header("X-Rave-Not-Processed") == "true")
            #expect(serviceDown.header("Retry-After") == "1")
            #expect(serviceDown.json?["notProcessed"] as? Bool == true)
        }
    }

    @Test func warmCallsAreServedOnTheConnectionsLoopWithTheSameAnswers() async throws {
        try await Self.with { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let headers = ["Authorization": "Bearer \(try harness.token(for: "user-9"))"]
            let pipeline = harness.runtime.pipeline
            // The first calls take the general path: the token is cached after the first, and the loop's backend
            // connection opens in the background.
            let before = pipeline.loopProxiedCalls.load(ordering: .relaxed)
            var tookTheLoopPath = false
            for _ in 0..<200 where !tookTheLoopPath {
                let response = try await connection.post(Self.echo, json: Self.whoami, headers: headers)
                #expect(Self.payload(response) == "user-9|app-1|session-user-9|player|127.0.0.1|-")
                tookTheLoopPath = pipeline.loopProxiedCalls.load(ordering: .relaxed) > before
                if !tookTheLoopPath { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(tookTheLoopPath)

            let warm = pipeline.loopProxiedCalls.load(ordering: .relaxed)
            let echoed = try await connection.post(
                Self.echo, json: Self.whoami, headers: headers.merging(["X-Request-Id": "loop-1"]) { $1 })
            #expect(echoed.status == 200)
            #expect(echoed.header("X-Request-Id") == "loop-1")
            #expect(Self.payload(echoed) == "user-9|app-1|session-user-9|player|127.0.0.1|-")
            let failed = try await connection.post(
                "/v1/rave.echo.v1.Echo/Fail", json: #"{"code": "NOT_FOUND", "message": "no such board"}"#,
                headers: headers)
            #expect(failed.status == 404)
            #expect(failed.json?["status"] as? String == "NOT_FOUND")
            #expect(failed.json?["message"] as? String == "no such board")
            let badField = try await connection.post(Self.echo, json: #"{"colour": "red"}"#, headers: headers)
            #expect(badField.status == 400)
            // The two answered calls took the loop path; the refused body never left the gateway.
            #expect(pipeline.loopProxiedCalls.load(ordering: .relaxed) == warm + 2)
            #expect(pipeline.protection.inFlight.current == 0)
        }
    }

    @Test func adminMethodsPassTheGatewayWithTheAdminCertificate() async throws {
        try await Self.with { harness in
            let connection = try await harness.http(certificate: "admin")
            defer { connection.close() }
            // The identity stand-in serves no admin methods: the refusal comes from the backend, not the gateway.
            let response = try await connection.post("/v1/rave.identity.v1.IdentityAdmin/CreatePublisher", json: "{}")
            #expect(response.status == 501)
            #expect(response.json?["status"] as? String == "UNIMPLEMENTED")
        }
    }

    @Test func aBodyOverTheLimitIs413AndCloses() async throws {
        try await Self.with(["RAVE_GATEWAY_MAX_REQUEST": "2KiB"]) { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            connection.send("POST \(Self.echo) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4096\r\n\r\n")
            let response = try await connection.response()
            #expect(response.status == 413)
            #expect(response.json?["status"] as? String == "RESOURCE_EXHAUSTED")
            try await connection.waitForClose()
        }
    }

    @Test func aTinyRateLimitAnswers429WithRetryAfter() async throws {
        try await Self.with(["RAVE_GATEWAY_ADDRESS_RATE": "1", "RAVE_GATEWAY_ADDRESS_BURST": "1"]) { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let token = try harness.token(for: "user-4")
            var statuses: [Int] = []
            var limited: TestHTTPResponse?
            // One call a second with no burst: of five calls in a row, the first passes and a later one is refused.
            for _ in 0..<5 where limited == nil {
                let response = try await connection.post(
                    Self.echo, json: #"{"payload": "aGk="}"#, headers: ["Authorization": "Bearer \(token)"])
                statuses.append(response.status)
                if response.status == 429 { limited = response }
            }
            #expect(statuses.first == 200)
            let response = try #require(limited)
            #expect(response.header("Retry-After") == "1")
            #expect(response.header("X-Rave-Not-Processed") == "true")
            #expect(response.json?["status"] as? String == "RESOURCE_EXHAUSTED")
        }
    }

    // MARK: - HTTP/1.1

    @Test func oneConnectionCarriesSeveralRequestsChunkedAndPipelined() async throws {
        try await Self.with { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let token = try harness.token(for: "user-5")
            for index in 0..<3 {
                let response = try await connection.post(
                    Self.echo, json: #"{"payload": "aGk="}"#,
                    headers: ["Authorization": "Bearer \(token)", "X-Request-Id": "keep-\(index)"])
                #expect(response.status == 200)
                #expect(response.header("X-Request-Id") == "keep-\(index)")
            }
            let body = #"{"payload": "Y2h1bmtlZA=="}"#
            let half = body.utf8.count / 2
            connection.send(
                "POST \(Self.echo) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\n"
                    + String(half, radix: 16) + "\r\n" + String(body.prefix(half)) + "\r\n"
                    + String(body.utf8.count - half, radix: 16) + ";ext=1\r\n" + String(body.dropFirst(half)) + "\r\n"
                    + "0\r\n\r\n")
            let chunked = try await connection.response()
            #expect(Self.payload(chunked) == "chunked")

            // The first call is held at the echo for 300 ms; the second is answered after it all the same.
            let slow = #"{"payload": "Zmlyc3Q=", "delayMs": 300}"#
            let fast = #"{"payload": "c2Vjb25k"}"#
            func request(_ path: String, _ json: String, id: String) -> String {
                "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nX-Request-Id: \(id)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
            }
            connection.send(
                request("/v1/rave.echo.v1.Echo/EchoAfterDelay", slow, id: "p1") + request(Self.echo, fast, id: "p2"))
            let first = try await connection.response()
            let second = try await connection.response()
            #expect(first.header("X-Request-Id") == "p1")
            #expect(Self.payload(first) == "first")
            #expect(second.header("X-Request-Id") == "p2")
            #expect(Self.payload(second) == "second")
        }
    }

    @Test func theRequestIDIsEchoedOrMadeUp() async throws {
        try await Self.with { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let given = try await connection.post(Self.echo, json: "{}", headers: ["X-Request-Id": "mine-42"])
            #expect(given.header("X-Request-Id") == "mine-42")
            let madeUp = try await connection.post(Self.echo, json: "{}")
            let id = try #require(madeUp.header("X-Request-Id"))
            #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
            let invalid = try await connection.post(Self.echo, json: "{}", headers: ["X-Request-Id": "a b"])
            #expect(invalid.header("X-Request-Id") != "a b")
        }
    }

    @Test func aStalledHeadIsAnswered408AndClosed() async throws {
        try await Self.with(["RAVE_STALLED_FRAME_TIMEOUT": "100ms"]) { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            connection.send("POST \(Self.echo) HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            let response = try await connection.response()
            #expect(response.status == 408)
            #expect(response.json?["status"] as? String == "DEADLINE_EXCEEDED")
            try await connection.waitForClose()
        }
    }

    @Test func bothPortsShareOnePerAddressConnectionCount() async throws {
        try await Self.with(["RAVE_GATEWAY_MAX_CONNECTIONS_PER_ADDRESS": "2"]) { harness in
            let binary = try await harness.connect()
            defer { binary.close() }
            let http = try await harness.http()
            defer { http.close() }
            await #expect(throws: (any Error).self) { _ = try await harness.http() }
        }
    }

    // MARK: - HTTP/2

    @Test(.enabled(if: ExternalCommand.isInstalled("/usr/bin/nghttp") && ExternalCommand.isInstalled("/usr/bin/curl")))
    func http2CarriesCallsConcurrentlyOnOneConnection() async throws {
        try await Self.with { harness in
            let port = try #require(harness.runtime.httpPort)
            let token = try harness.token(for: "user-8")
            let body = harness.directory + "/delayed.json"
            try Data(#"{"payload": "aGk=", "delayMs": 200}"#.utf8).write(to: URL(fileURLWithPath: body))
            // nghttp sends its 20 requests as streams of one connection; the echo sees them overlap.
            let many = try await ExternalCommand.run(
                "/usr/bin/nghttp",
                [
                    "--null-out", "--multiply=20", "--data=\(body)", "--header=authorization: Bearer \(token)",
                    "--header=content-type: application/json",
                    "https://127.0.0.1:\(port)/v1/rave.echo.v1.Echo/EchoAfterDelay",
                ])
            #expect(many.status == 0, "\(many.errors)")
            #expect(harness.echo.delayedCalls.withLock { $0.most } > 1)

            let one = try await ExternalCommand.run(
                "/usr/bin/curl",
                [
                    "--http2", "--silent", "--show-error", "--cacert", harness.directory + "/ca.pem",
                    "--header", "Authorization: Bearer \(token)", "--header", "Content-Type: application/json",
                    "--header", "X-Request-Id: over-h2", "--data", Self.whoami, "--include",
                    "https://127.0.0.1:\(port)\(Self.echo)",
                ])
            #expect(one.status == 0, "\(one.errors)")
            #expect(one.output.hasPrefix("HTTP/2 200"), "\(one.output)")
            #expect(one.output.contains("x-request-id: over-h2"))
            #expect(one.output.contains("user-8|app-1|session-user-8|player|127.0.0.1|-".base64Encoded))
        }
    }

    // MARK: - CORS

    @Test func corsPreflightsAndARefusedOriginsCallNeverReachesTheService() async throws {
        try await Self.with { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let token = try harness.token(for: "user-6")
            let preflight = ["Origin": "https://game.example", "Access-Control-Request-Method": "POST"]
            let refused = try await connection.request("OPTIONS", Self.echo, headers: preflight)
            #expect(refused.status == 403)
            #expect(refused.header("Access-Control-Allow-Origin") == nil)

            let callsBefore = harness.echo.remainingMilliseconds.withLock { $0.count }
            let post = try await connection.post(
                Self.echo, json: Self.whoami,
                headers: ["Authorization": "Bearer \(token)", "Origin": "https://game.example"])
            #expect(post.status == 403)
            #expect(harness.echo.remainingMilliseconds.withLock { $0.count } == callsBefore)

            harness.runtime.allowedOrigins.replace(with: ["https://game.example"])
            let allowed = try await connection.request("OPTIONS", Self.echo, headers: preflight)
            #expect(allowed.status == 204)
            #expect(allowed.header("Access-Control-Allow-Origin") == "https://game.example")
            #expect(allowed.header("Access-Control-Max-Age") == "600")
            let call = try await connection.post(
                Self.echo, json: Self.whoami,
                headers: ["Authorization": "Bearer \(token)", "Origin": "https://game.example"])
            #expect(call.status == 200)
            #expect(call.header("Access-Control-Allow-Origin") == "https://game.example")
            #expect(call.header("Access-Control-Expose-Headers") == "x-request-id, retry-after, x-rave-not-processed")

            let sameOrigin = try await connection.post(
                Self.echo, json: "{}", headers: ["Origin": "https://127.0.0.1"])
            #expect(sameOrigin.status == 401)
            #expect(sameOrigin.header("Access-Control-Allow-Origin") == "https://127.0.0.1")
        }
    }

    // MARK: - Static files

    @Test func staticFilesIndexHTMLAndNoWayOut() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("rave-demo-\(UUID())").path
        try FileManager.default.createDirectory(atPath: root + "/demo", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("<h1>demo</h1>".utf8).write(to: URL(fileURLWithPath: root + "/demo/index.html"))
        try Data("play()".utf8).write(to: URL(fileURLWithPath: root + "/demo/game.js"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: root + "/secret.txt"))
        try await Self.with(["RAVE_GATEWAY_HTTP_STATIC": "/demo/=\(root)/demo"]) { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let index = try await connection.request("GET", "/demo/")
            #expect(index.status == 200)
            #expect(index.text == "<h1>demo</h1>")
            #expect(index.header("Content-Type") == "text/html; charset=utf-8")
            let script = try await connection.request("GET", "/demo/game.js")
            #expect(script.text == "play()")
            #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
            let head = try await connection.request("HEAD", "/demo/game.js")
            #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == "6")
            for path in ["/demo/../secret.txt", "/demo/%2e%2e/secret.txt", "/demo/..%2fsecret.txt", "/secret.txt"] {
                let response = try await connection.request("GET", path)
                #expect(response.status == 404, "\(path)")
                #expect(response.text != "secret", "\(path)")
            }
        }
    }

    @Test func theOpenAPIDocumentIsServed() async throws {
        try await Self.with { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let document = try await connection.request("GET", "/v1/openapi.json")
            #expect(document.status == 200)
            #expect(document.header("Content-Type")?.hasPrefix("application/json") == true)
            #expect(document.text == OpenAPIDocument.json)
            #expect(document.json?["openapi"] as? String == "3.1.0")
        }
    }

    // MARK: - Batch

    @Test func aBatchTakesAndGivesJSONAndReferencesWork() async throws {
        try await Self.with { harness in
            let connection = try await harness.http()
            defer { connection.close() }
            let token = try harness.token(for: "user-7")
            let batch = #"""
                {"calls": [
                  {"name": "first", "method": "rave.echo.v1.Echo/Echo", "request": {"payload": "aGk="}},
                  {"name": "second", "method": "rave.echo.v1.Echo/Echo", "request": {},
                   "references": [{"fromCall": "first", "fromPath": "payload", "toPath": "payload"}]},
                  {"name": "third", "method": "rave.echo.v1.Echo/Fail", "request": {"code": "NOT_FOUND", "message": "gone"}}
                ]}
                """#
            let response = try await connection.post(
                "/v1/batch", json: batch, headers: ["Authorization": "Bearer \(token)"])
            #expect(response.status == 200)
            let results = try #require(response.json?["results"] as? [[String: Any]])
            #expect(results.map { $0["name"] as? String } == ["first", "second", "third"])
            #expect((results[0]["response"] as? [String: Any])?["payload"] as? String == "aGk=")
            #expect((results[1]["response"] as? [String: Any])?["payload"] as? String == "aGk=")
            #expect(results[2]["code"] as? String == "NOT_FOUND")
            #expect(results[2]["message"] as? String == "gone")

            let invalid = try await connection.post(
                "/v1/batch",
                json: #"{"calls": [{"name": "a", "method": "rave.echo.v1.Echo/Echo", "dependsOn": ["b"]}]}"#,
                headers: ["Authorization": "Bearer \(token)"])
            #expect(invalid.status == 400)
            #expect(invalid.json?["status"] as? String == "INVALID_ARGUMENT")
        }
    }
}

extension String {
    /// The UTF-8 of the string in base64, as protobuf's JSON mapping writes bytes.
    var base64Encoded: String { Data(utf8).base64EncodedString() }
}

extension GatewayHarness {
    /// A TLS connection to the front door; `certificate` names a client certificate of the harness CA to present.
    func http(certificate: String? = nil) async throws -> HTTPTestConnection {
        guard let port = runtime.httpPort else { throw TestFailure("the front door is off") }
        return try await HTTPTestConnection.connect(
            port: port, certificates: directory, certificate: certificate, group: clientGroup)
    }
}
