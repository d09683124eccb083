import Foundation
import RaveHTTP
import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// The front door's rules without sockets: what a request becomes, and how an outcome becomes a response.
@Suite struct HTTPFrontDoorTests {
    static let echo = "rave.echo.v1.Echo/Echo"

    static func frontDoor(
        origins: AllowedOrigins = AllowedOrigins(), staticFiles: StaticFiles = StaticFiles(),
        openAPIDocument: [UInt8]? = nil
    ) -> HTTPFrontDoor {
        HTTPFrontDoor(
            settings: HTTPFrontDoor.Settings(
                maxRequestBytes: 1024, defaultTimeout: .seconds(30), maxTimeout: .seconds(300)),
            cors: CORSPolicy(allowedOrigins: origins), staticFiles: staticFiles, openAPIDocument: openAPIDocument,
            knownMethods: MethodRoute.knownMethods)
    }

    static func request(
        _ method: String = "POST", _ target: String = "/v1/" + echo, headers: [String: String] = [:],
        body: String = "{}"
    ) -> HTTPServerRequest {
        var fields = [HTTPHeader(name: "Host", value: "gateway.test:8443")]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            fields.append(HTTPHeader(name: name, value: value))
        }
        return HTTPServerRequest(method: method, target: target, headers: fields, body: Array(body.utf8))
    }

    func decide(_ request: HTTPServerRequest, frontDoor: HTTPFrontDoor = frontDoor()) -> HTTPFrontDoor.Decision {
        frontDoor.decide(request) { "made-up-id" }
    }

    func response(_ decision: HTTPFrontDoor.Decision) throws -> HTTPServerResponse {
        guard case .respond(let response) = decision else { throw TestFailure("expected a response, got a call") }
        return response
    }

    func call(_ decision: HTTPFrontDoor.Decision) throws -> FrontDoorCall {
        guard case .call(let call) = decision else { throw TestFailure("expected a call, got \(decision)") }
        return call
    }

    func errorBody(_ response: HTTPServerResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    // MARK: - Calls

    @Test func aKnownMethodBecomesACallWithItsMetadataAndDeadline() throws {
        let call = try call(
            decide(
                Self.request(
                    headers: [
                        "Authorization": "Bearer abc", "Idempotency-Key": "key-1", "X-Request-Id": "trace-7",
                        "X-Rave-Timeout-Ms": "1500",
                    ])))
        #expect(call.method == Self.echo)
        #expect(!call.isBatch)
        #expect(call.metadata == ["authorization": "Bearer abc", "idempotency-key": "key-1", "trace-id": "trace-7"])
        #expect(call.timeout == 1_500_000_000)
        #expect(call.requestID == "trace-7")
        #expect(call.requestEncoding == .json && call.responseEncoding == .json)
        #expect(call.headers.contains(HTTPHeader(name: "X-Request-Id", value: "trace-7")))
        #expect(call.headers.contains(HTTPHeader(name: "Cache-Control", value: "no-store")))
    }

    @Test func deadlinesDefaultAndAreCapped() throws {
        #expect(try call(decide(Self.request())).timeout == 30_000_000_000)
        #expect(try call(decide(Self.request(headers: ["X-Rave-Timeout-Ms": "0"]))).timeout == 30_000_000_000)
        #expect(try call(decide(Self.request(headers: ["X-Rave-Timeout-Ms": "9999999"]))).timeout == 300_000_000_000)
        let bad = try response(decide(Self.request(headers: ["X-Rave-Timeout-Ms": "1.5s"])))
        #expect(bad.status == .badRequest)
        #expect(try errorBody(bad)["status"] as? String == "INVALID_ARGUMENT")
    }

    @Test(arguments: ["", String(repeating: "a", count: 129), "has space", "tab\there", "é"])
    func anUnusableRequestIDIsReplaced(_ id: String) throws {
        let call = try call(decide(Self.request(headers: ["X-Request-Id": id])))
        #expect(call.requestID == "made-up-id")
        #expect(call.metadata["trace-id"] == "made-up-id")
    }

    @Test func bothBatchPathsAreTheBatchMethod() throws {
        for path in ["/v1/batch", "/v1/rave.gateway.v1.Gateway/Batch"] {
            let call = try call(decide(Self.request("POST", path)))
            #expect(call.isBatch)
            #expect(call.method == "rave.gateway.v1.Gateway/Batch")
        }
    }

    @Test func encodingsFollowContentTypeAndAccept() throws {
        let protobuf = try call(decide(Self.request(headers: ["Content-Type": "application/x-protobuf"])))
        #expect(protobuf.requestEncoding == .protobuf && protobuf.responseEncoding == .protobuf)
        let mixed = try call(
            decide(
                Self.request(headers: [
                    "Content-Type": "application/json; charset=utf-8", "Accept": "application/x-protobuf",
                ])))
        #expect(mixed.requestEncoding == .json && mixed.responseEncoding == .protobuf)
        let anything = try call(
            decide(Self.request(headers: ["Content-Type": "application/x-protobuf", "Accept": "*/*"])))
        #expect(anything.responseEncoding == .protobuf)
        let listed = try call(decide(Self.request(headers: ["Accept": "text/html, application/json;q=0.9"])))
        #expect(listed.responseEncoding == .json)
    }

    // MARK: - Refusals

    @Test func anUnknownMethodIsNotFoundBeforeAnythingElse() throws {
        let response = try response(decide(Self.request("POST", "/v1/rave.identity.v1.Identity/NoSuchMethod")))
        #expect(response.status == .notFound)
        let body = try errorBody(response)
        #expect(body["code"] as? Int == 5)
        #expect(body["status"] as? String == "NOT_FOUND")
        #expect((body["message"] as? String)?.contains("rave.identity.v1.Identity/NoSuchMethod") == true)
        #expect(body["notProcessed"] as? Bool == false)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("X-Request-Id") == "made-up-id")
    }

    @Test func otherHTTPMethodsOnTheAPIAreNotAllowed() throws {
        let get = try response(decide(Self.request("GET", body: "")))
        #expect(get.status == .methodNotAllowed)
        #expect(get.header("Allow") == "POST, OPTIONS")
        let options = try response(decide(Self.request("OPTIONS", body: "")))
        #expect(options.status == .noContent)
        #expect(options.header("Allow") == "POST, OPTIONS")
        let postDocument = try response(decide(Self.request("POST", "/v1/openapi.json")))
        #expect(postDocument.status == .methodNotAllowed)
        #expect(postDocument.header("Allow") == "GET, HEAD, OPTIONS")
    }

    @Test func anotherMediaTypeIsUnsupported() throws {
        let response = try response(
            decide(Self.request(headers: ["Content-Type": "application/x-www-form-urlencoded"])))
        #expect(response.status == .unsupportedMediaType)
        #expect(try errorBody(response)["status"] as? String == "INVALID_ARGUMENT")
    }

    @Test func aBodyOverTheLimitIsTooLarge() throws {
        let response = try response(decide(Self.request(body: String(repeating: " ", count: 1025))))
        #expect(response.status == .contentTooLarge)
        #expect(try errorBody(response)["status"] as? String == "RESOURCE_EXHAUSTED")
    }

    @Test func otherPathsAreNotFound() throws {
        #expect(try response(decide(Self.request("GET", "/", body: ""))).status == .notFound)
        #expect(try response(decide(Self.request("GET", "/demo/", body: ""))).status == .notFound)
    }

    @Test func theOpenAPIDocumentIsServedWhenWiredIn() throws {
        let missing = try response(decide(Self.request("GET", "/v1/openapi.json", body: "")))
        #expect(missing.status == .notFound)
        #expect(try errorBody(missing)["status"] as? String == "NOT_FOUND")
        let document = Array("{\"openapi\": \"3.1.0\"}".utf8)
        let served = try response(
            decide(
                Self.request("GET", "/v1/openapi.json", body: ""), frontDoor: Self.frontDoor(openAPIDocument: document))
        )
        #expect(served.status == .ok)
        #expect(served.body == document)
        #expect(served.header("Content-Type") == "application/json")
    }

    // MARK: - CORS

    @Test func theGatewaysOwnOriginIsAllowed() throws {
        let call = try call(decide(Self.request(headers: ["Origin": "https://gateway.test:8443"])))
        #expect(
            call.headers.contains(HTTPHeader(name: "Access-Control-Allow-Origin", value: "https://gateway.test:8443")))
        #expect(call.headers.contains(HTTPHeader(name: "Vary", value: "Origin")))
        #expect(
            call.headers.contains(
                HTTPHeader(
                    name: "Access-Control-Expose-Headers", value: "x-request-id, retry-after, x-rave-not-processed")))
    }

    @Test func anOriginOutsideTheSetIsRefusedWithoutCORSHeaders() throws {
        let origins = AllowedOrigins(["https://game.example"])
        for origin in ["https://evil.example", "http://gateway.test:8443", "https://game.example:443", "null"] {
            let response = try response(
                decide(Self.request(headers: ["Origin": origin]), frontDoor: Self.frontDoor(origins: origins)))
            #expect(response.status == .forbidden, "\(origin)")
            #expect(try errorBody(response)["status"] as? String == "PERMISSION_DENIED")
            #expect(!response.headers.contains { $0.name.hasPrefix("Access-Control") })
        }
    }

    @Test func aPreflightFromAnAllowedOriginIsAnsweredAndTheSetCanBeReplaced() throws {
        let origins = AllowedOrigins()
        let frontDoor = Self.frontDoor(origins: origins)
        let preflight = Self.request(
            "OPTIONS", headers: ["Origin": "https://game.example", "Access-Control-Request-Method": "POST"], body: "")
        #expect(try response(decide(preflight, frontDoor: frontDoor)).status == .forbidden)
        origins.replace(with: ["https://game.example"])
        let allowed = try response(decide(preflight, frontDoor: frontDoor))
        #expect(allowed.status == .noContent)
        #expect(allowed.header("Access-Control-Allow-Origin") == "https://game.example")
        #expect(allowed.header("Access-Control-Allow-Methods") == "GET, POST, OPTIONS")
        #expect(
            allowed.header("Access-Control-Allow-Headers")
                == "authorization, content-type, accept, idempotency-key, x-request-id, x-rave-timeout-ms, x-rave-reason"
        )
        #expect(allowed.header("Access-Control-Max-Age") == "600")
        origins.replace(with: [])
        #expect(try response(decide(preflight, frontDoor: frontDoor)).status == .forbidden)
    }

    // MARK: - Static files

    static let files = StaticFiles(
        files: [
            "/demo/index.html": StaticFiles.File(body: Array("<html>".utf8), contentType: "text/html; charset=utf-8"),
            "/demo/game.js": StaticFiles.File(body: Array("run()".utf8), contentType: "text/javascript; charset=utf-8"),
        ], prefixes: ["/demo/"])

    @Test func staticFilesAndIndexHTMLAreServedByExactPathOnly() throws {
        let frontDoor = Self.frontDoor(staticFiles: Self.files)
        let index = try response(decide(Self.request("GET", "/demo/", body: ""), frontDoor: frontDoor))
        #expect(index.status == .ok && index.body == Array("<html>".utf8))
        #expect(index.header("Content-Type") == "text/html; charset=utf-8")
        let script = try response(decide(Self.request("GET", "/demo/game.js?v=2", body: ""), frontDoor: frontDoor))
        #expect(script.body == Array("run()".utf8))
        for path in [
            "/demo/../demo/game.js", "/demo/./game.js", "/demo//game.js", "/demo/%2e%2e/secret", "/demo/GAME.JS",
        ] {
            #expect(
                try response(decide(Self.request("GET", path, body: ""), frontDoor: frontDoor)).status == .notFound,
                "\(path)")
        }
        let post = try response(decide(Self.request("POST", "/demo/game.js"), frontDoor: frontDoor))
        #expect(post.status == .methodNotAllowed)
        #expect(post.header("Allow") == "GET, HEAD")
    }

    // MARK: - Outcomes

    @Test(arguments: [
        (StatusCode.cancelled, 499), (.unknown, 500), (.invalidArgument, 400), (.deadlineExceeded, 504),
        (.notFound, 404), (.alreadyExists, 409), (.permissionDenied, 403), (.resourceExhausted, 429),
        (.failedPrecondition, 400), (.aborted, 409), (.outOfRange, 400), (.unimplemented, 501), (.internal, 500),
        (.unavailable, 503), (.dataLoss, 500), (.unauthenticated, 401),
    ])
    func everyCodeHasItsHTTPStatus(code: StatusCode, status: Int) throws {
        let response = HTTPFrontDoor.failure(RPCError(code, "m"), headers: [])
        #expect(response.status.code == status)
        #expect(try errorBody(response)["code"] as? Int == Int(code.rawValue))
    }

    @Test func aRateLimitCarriesRetryAfterInWholeSecondsRoundedUp() throws {
        let info = GatewayV1.RetryInfo(retryAfterMs: 1200)
        let error = RPCError(.resourceExhausted, "slow down", details: info.protobufBytes(), notProcessed: true)
        let response = HTTPFrontDoor.failure(error, headers: [])
        #expect(response.status == .tooManyRequests)
        #expect(response.header("Retry-After") == "2")
        #expect(response.header("X-Rave-Not-Processed") == "true")
        let body = try errorBody(response)
        #expect(body["details"] as? String == Data(info.protobufBytes()).base64EncodedString())
        #expect(body["notProcessed"] as? Bool == true)
        #expect(HTTPFrontDoor.failure(RPCError(.resourceExhausted, "full"), headers: []).header("Retry-After") == nil)
    }

    @Test func aNotProcessedUnavailableMayBeRetriedAfterASecond() {
        #expect(
            HTTPFrontDoor.failure(.unavailable("down", notProcessed: true), headers: []).header("Retry-After") == "1")
        #expect(HTTPFrontDoor.failure(.unavailable("down"), headers: []).header("Retry-After") == nil)
    }

    @Test func errorMessagesAreEscapedJSON() throws {
        let message = "quote \" backslash \\ newline \n control \u{1} line separator \u{2028} é"
        let body = try errorBody(HTTPFrontDoor.failure(.invalidArgument(message), headers: []))
        #expect(body["message"] as? String == message)
    }
}

/// The transcoding of bodies between JSON and the encoded messages.
@Suite struct FrontDoorTranscoderTests {
    let transcoder = FrontDoorTranscoder()

    func call(_ method: String, body: String, isBatch: Bool = false) -> FrontDoorCall {
        FrontDoorCall(
            method: method, isBatch: isBatch, body: Array(body.utf8), requestEncoding: .json, responseEncoding: .json,
            metadata: [:], timeout: 1, requestID: "r", headers: [])
    }

    @Test func aJSONRequestBecomesTheEncodedMessage() throws {
        let request = try transcoder.request(
            call("rave.identity.v1.Identity/GuestLogin", body: #"{"appId": "a1", "device": {"device_id": "d1"}}"#))
        var expected = IdentityV1.GuestLoginRequest()
        expected.appId = "a1"
        expected.device = IdentityV1.DeviceInfo(deviceId: "d1", name: "", platform: "")
        #expect(try IdentityV1.GuestLoginRequest(protobufBytes: request.bytes) == expected)
        #expect(try transcoder.request(call("rave.identity.v1.Identity/GetCurrentUser", body: "")).bytes.isEmpty)
    }

    @Test func anUnknownFieldIsNamed() {
        #expect {
            try transcoder.request(call("rave.identity.v1.Identity/GuestLogin", body: #"{"appID": "a1"}"#))
        } throws: { error in
            guard let error = error as? RPCError else { return false }
            return error.code == .invalidArgument && error.message.contains("appID")
        }
        #expect(throws: RPCError.self) {
            try transcoder.request(call("rave.identity.v1.Identity/GuestLogin", body: "{not json"))
        }
    }

    @Test func aBatchCarriesItsCallsRequestsAsJSONObjects() throws {
        let body = #"""
            {"calls": [
              {"name": "me", "method": "rave.identity.v1.Identity/GetCurrentUser", "request": {}},
              {"name": "echo", "method": "rave.echo.v1.Echo/Echo", "request": {"payload": "aGk="}, "dependsOn": ["me"]}
            ]}
            """#
        let request = try transcoder.request(call("rave.gateway.v1.Gateway/Batch", body: body, isBatch: true))
        #expect(request.batchMethods == ["rave.identity.v1.Identity/GetCurrentUser", "rave.echo.v1.Echo/Echo"])
        let batch = try GatewayV1.BatchRequest(protobufBytes: request.bytes)
        #expect(batch.calls.map(\.name) == ["me", "echo"])
        #expect(batch.calls[1].dependsOn == ["me"])
        #expect(try EchoV1.EchoRequest(protobufBytes: batch.calls[1].request).payload == Array("hi".utf8))
        #expect(throws: RPCError.self) {
            try transcoder.request(
                call(
                    "rave.gateway.v1.Gateway/Batch", body: #"{"calls": [{"name": "a", "request": "aGk="}]}"#,
                    isBatch: true))
        }
    }

    @Test func aBatchResponseCarriesEachResponseAsJSON() throws {
        var ok = GatewayV1.BatchResult()
        ok.name = "echo"
        ok.response = EchoV1.EchoResponse(payload: Array("hi".utf8)).protobufBytes()
        var failed = GatewayV1.BatchResult()
        failed.name = "me"
        failed.code = .unauthenticated
        failed.message = "sign in"
        let bytes = GatewayV1.BatchResponse(results: [ok, failed]).protobufBytes()
        let json = try transcoder.response(
            bytes, for: call("rave.gateway.v1.Gateway/Batch", body: "", isBatch: true),
            batchMethods: ["rave.echo.v1.Echo/Echo", "rave.identity.v1.Identity/GetCurrentUser"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
        let results = try #require(object["results"] as? [[String: Any]])
        #expect(results[0]["name"] as? String == "echo")
        #expect((results[0]["response"] as? [String: Any])?["payload"] as? String == "aGk=")
        #expect(results[1]["code"] as? String == "UNAUTHENTICATED")
        #expect(results[1]["response"] == nil)
    }
}

/// Loading static files from disk: what is served, what is skipped, and the size limits.
@Suite struct StaticFilesTests {
    func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rave-static-\(UUID())").path
        try FileManager.default.createDirectory(atPath: path + "/sub", withIntermediateDirectories: true)
        return path
    }

    @Test func loadsFilesAndSubdirectoriesButNoLinksHiddenFilesOrOddNames() throws {
        let root = try directory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let secret = try directory()
        defer { try? FileManager.default.removeItem(atPath: secret) }
        try Data("<html>".utf8).write(to: URL(fileURLWithPath: root + "/index.html"))
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/sub/app.js"))
        try Data("h".utf8).write(to: URL(fileURLWithPath: root + "/.env"))
        try Data("s".utf8).write(to: URL(fileURLWithPath: root + "/with space.js"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: secret + "/secret.txt"))
        try FileManager.default.createSymbolicLink(
            atPath: root + "/linked.txt", withDestinationPath: secret + "/secret.txt")
        try FileManager.default.createSymbolicLink(atPath: root + "/linked-dir", withDestinationPath: secret)
        let loaded = try StaticFiles.load([StaticFiles.Mount(prefix: "/demo/", directory: root)])
        #expect(Set(loaded.files.files.keys) == ["/demo/index.html", "/demo/sub/app.js"])
        #expect(loaded.files.files["/demo/sub/app.js"]?.contentType == "text/javascript; charset=utf-8")
        #expect(loaded.missing.isEmpty)
        #expect(loaded.files.file(at: "/demo/")?.body == Array("<html>".utf8))
    }

    @Test func aMissingDirectoryMountsNothing() throws {
        let loaded = try StaticFiles.load([StaticFiles.Mount(prefix: "/sdk/", directory: "/nonexistent/rave-sdk")])
        #expect(loaded.files.files.isEmpty)
        #expect(loaded.missing == ["/nonexistent/rave-sdk"])
    }

    @Test func aFileOverTheLimitStopsStartUp() throws {
        let root = try directory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data(count: StaticFiles.maxFileBytes + 1).write(to: URL(fileURLWithPath: root + "/big.bin"))
        #expect(throws: (any Error).self) {
            try StaticFiles.load([StaticFiles.Mount(prefix: "/demo/", directory: root)])
        }
    }

    @Test func theSettingIsParsedAndCheckedAtStartUp() throws {
        let mounts = try StaticFiles.mounts(parsing: "/demo/=Clients/demo, /sdk/=Clients/web", variable: "V")
        #expect(
            mounts == [
                .init(prefix: "/demo/", directory: "Clients/demo"), .init(prefix: "/sdk/", directory: "Clients/web"),
            ])
        #expect(try StaticFiles.mounts(parsing: "", variable: "V").isEmpty)
        for bad in ["demo=Clients/demo", "/demo=Clients/demo", "/demo/=", "/v1/=Clients/demo"] {
            #expect(throws: (any Error).self) { try StaticFiles.mounts(parsing: bad, variable: "V") }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
