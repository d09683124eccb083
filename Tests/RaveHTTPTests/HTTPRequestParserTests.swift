import RaveHTTP
import Testing

@Suite struct HTTPRequestParserTests {
    static let limits = HTTPLimits(maxHeadBytes: 1024, maxHeaderCount: 16, maxBodyBytes: 64)

    /// Every request in `text`, or the error the parser stopped with.
    func parseAll(
        _ text: String, limits: HTTPLimits = limits
    ) -> (requests: [HTTPServerRequest], error: HTTPParseError?) {
        parseAll(Array(text.utf8), pieces: [text.utf8.count], limits: limits)
    }

    /// Feeds `bytes` in pieces of the given sizes (cycled), taking requests out after each piece.
    func parseAll(
        _ bytes: [UInt8], pieces: [Int], limits: HTTPLimits = limits
    ) -> (
        requests: [HTTPServerRequest], error: HTTPParseError?
    ) {
        var parser = HTTPRequestParser(limits: limits)
        var requests: [HTTPServerRequest] = []
        var offset = 0
        var piece = 0
        while offset < bytes.count {
            let size = max(1, pieces[piece % pieces.count])
            piece += 1
            parser.append(bytes[offset..<min(bytes.count, offset + size)])
            offset += size
            do {
                while let request = try parser.nextRequest() { requests.append(request) }
            } catch {
                return (requests, error)
            }
        }
        return (requests, nil)
    }

    /// The error `nextRequest()` throws now, nil when it returns.
    static func nextError(_ parser: inout HTTPRequestParser) -> HTTPParseError? {
        do {
            _ = try parser.nextRequest()
            return nil
        } catch {
            return error
        }
    }

    func error(_ text: String, limits: HTTPLimits = limits) -> HTTPParseError? {
        parseAll(text, limits: limits).error
    }

    @Test func parsesRequestLineHeadersAndAContentLengthBody() throws {
        let parsed = parseAll(
            "POST /v1/x?y=1 HTTP/1.1\r\nHost: a\r\nContent-Type:  application/json \r\nContent-Length: 5\r\n\r\nhello")
        #expect(parsed.error == nil)
        let request = try #require(parsed.requests.first)
        #expect(request.method == "POST")
        #expect(request.target == "/v1/x?y=1")
        #expect(request.path == "/v1/x")
        #expect(request.version == .http11)
        #expect(request.header("content-type") == "application/json")
        #expect(request.body == Array("hello".utf8))
        #expect(request.keepAlive)
    }

    @Test func readsChunkedBodiesIgnoringExtensionsAndTrailers() throws {
        let text =
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n1 ; x\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: yes\r\n\r\n"
        let parsed = parseAll(text)
        #expect(parsed.error == nil)
        #expect(parsed.requests.map(\.body) == [Array("hello 0123456789".utf8)])
        #expect(parsed.requests.first?.header("trailer") == nil)
    }

    @Test func keepAliveFollowsVersionAndConnectionHeader() {
        let requests = parseAll(
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n"
                + "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"
        ).requests
        #expect(requests.map(\.keepAlive) == [false, false, true, true])
    }

    static let pipelined =
        "\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n"
        + "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        + "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n"
        + "HEAD /d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

    @Test func pipelinedRequestsComeOutInOrderHoweverTheBytesAreSplit() {
        let bytes = Array(Self.pipelined.utf8)
        let whole = parseAll(bytes, pieces: [bytes.count])
        #expect(whole.error == nil)
        #expect(whole.requests.map(\.target) == ["/a", "/b", "/c", "/d"])
        #expect(whole.requests.map(\.body) == [[], Array("abc".utf8), Array("de".utf8), []])
        for size in 1...7 {
            let split = parseAll(bytes, pieces: [size])
            #expect(split.requests == whole.requests, "pieces of \(size)")
            #expect(split.error == nil)
        }
        #expect(parseAll(bytes, pieces: [3, 1, 7, 2, 11]).requests == whole.requests)
    }

    @Test func splittingAnywhereNeverChangesTheResultOrTheError() {
        let inputs = [
            Self.pipelined,
            "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
        ]
        for text in inputs {
            let bytes = Array(text.utf8)
            let whole = parseAll(bytes, pieces: [bytes.count])
            // Every cut point: the first piece ends at `cut`, the rest arrives at once.
            for cut in 1..<bytes.count {
                let split = parseAll(bytes, pieces: [cut, bytes.count])
                #expect(split.requests == whole.requests, "cut at \(cut) of \(text.debugDescription)")
                #expect(split.error == whole.error, "cut at \(cut) of \(text.debugDescription)")
            }
        }
    }

    // MARK: - Request smuggling

    @Test(arguments: [
        (
            "both framings", "both Content-Length and Transfer-Encoding",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
        ),
        (
            "framings reversed", "both Content-Length and Transfer-Encoding",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
        ),
        (
            "two equal lengths", "only one Content-Length",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"
        ),
        (
            "a length list", "Content-Length must be a decimal",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc"
        ),
        (
            "a signed length", "Content-Length must be a decimal",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc"
        ),
        (
            "a negative length", "Content-Length must be a decimal",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"
        ),
        (
            "a hex length", "Content-Length must be a decimal",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x3\r\n\r\nabc"
        ),
        (
            "an empty length", "Content-Length must be a decimal",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n"
        ),
        (
            "chunked twice", "only transfer coding accepted",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"
        ),
        (
            "two codings", "only transfer coding accepted",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
        ),
        (
            "an unknown coding", "only transfer coding accepted",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"
        ),
        (
            "two coding headers", "only transfer coding accepted",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
        (
            "a coding with HTTP/1.0", "HTTP/1.0 requests cannot use Transfer-Encoding",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
        ("obs-fold", "obsolete line folding", "GET / HTTP/1.1\r\nHost: a\r\nX-A: one\r\n two\r\n\r\n"),
        ("obs-fold with a tab", "obsolete line folding", "GET / HTTP/1.1\r\nHost: a\r\nX-A: one\r\n\ttwo\r\n\r\n"),
        ("a bare CR in a value", "bare CR", "GET / HTTP/1.1\r\nHost: a\r\nX-A: one\rtwo\r\n\r\n"),
        ("a bare LF line end", "bare LF", "GET / HTTP/1.1\r\nHost: a\nX-A: b\r\n\r\n"),
        ("bare LF head end", "bare LF", "GET / HTTP/1.1\nHost: a\n\n"),
        ("a bare LF first", "bare LF", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
        (
            "space before the colon", "malformed header field",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length : 3\r\n\r\nabc"
        ),
        ("a NUL in a value", "control character in header X-A", "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\u{0}b\r\n\r\n"),
        ("DEL in a value", "control character in header X-A", "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\u{7F}b\r\n\r\n"),
        ("no colon", "malformed header field", "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n"),
        (
            "a chunk size in hex notation", "malformed chunk size",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"
        ),
        (
            "a space before a chunk size", "must start with hex digits",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n"
        ),
        (
            "a space after a chunk size", "whitespace after a chunk size",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n"
        ),
        (
            "a signed chunk size", "must start with hex digits",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n"
        ),
        (
            "an empty chunk size", "must start with hex digits",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n"
        ),
        (
            "an overflowing chunk size", "more than 15 hex digits",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n"
        ),
        (
            "a chunk size with a bare LF", "bare LF",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n"
        ),
        (
            "a chunk longer than its size", "chunk data not followed by CRLF",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n0\r\n\r\n"
        ),
        (
            "a control character in an extension", "control character in a chunk extension",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a\u{1}\r\nhello\r\n0\r\n\r\n"
        ),
        (
            "a trailer with a bare LF", "bare LF",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\n\r\n"
        ),
        (
            "a folded trailer", "obsolete line folding",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n folded\r\n\r\n"
        ),
        ("no Host", "exactly one Host", "GET / HTTP/1.1\r\n\r\n"),
        ("two Hosts", "exactly one Host", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        ("a double space in the request line", "malformed request line", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n"),
        ("an absolute-form target", "must be a path starting with /", "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"),
        ("no version", "malformed request line", "GET /\r\n\r\n"),
        ("a bad method", "malformed request line", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n"),
    ])
    func ambiguousFramingIsABadRequest(name: String, reason: String, text: String) {
        let parsed = parseAll(text)
        #expect(parsed.requests.isEmpty, "\(name)")
        #expect(parsed.error?.status == .badRequest, "\(name): \(String(describing: parsed.error))")
        #expect(parsed.error?.reason.contains(reason) == true, "\(name): \(String(describing: parsed.error))")
    }

    @Test func anOversizedChunkSizeLineIsRefusedBeforeItEnds() {
        let extensions = ";" + String(repeating: "x", count: 2000)
        let text = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5" + extensions
        let error = self.error(text)
        #expect(error == .badRequest("the chunk size line exceeds 1024 bytes"))
    }

    @Test func aPortForProbesMayWaiveHostButNeverTakesTwo() {
        var limits = Self.limits
        limits.requiresHost = false
        #expect(parseAll("GET / HTTP/1.1\r\n\r\n", limits: limits).requests.count == 1)
        #expect(error("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", limits: limits)?.status == .badRequest)
        #expect(error("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n")?.status == .badRequest)
    }

    @Test func otherVersionsAreNotSupported() {
        #expect(error("GET / HTTP/2.0\r\nHost: a\r\n\r\n")?.status == .httpVersionNotSupported)
    }

    @Test func aFailedParserStaysFailed() {
        var parser = HTTPRequestParser(limits: Self.limits)
        parser.append(Array("GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        let first = Self.nextError(&parser)
        #expect(first?.status == .badRequest)
        #expect(Self.nextError(&parser) == first)
    }

    // MARK: - Limits

    @Test func anOversizedHeadIsRefusedBeforeItEnds() {
        let text = "GET / HTTP/1.1\r\nHost: a\r\nX-Filler: " + String(repeating: "a", count: 2000)
        #expect(
            error(text)
                == HTTPParseError(
                    status: .requestHeaderFieldsTooLarge, reason: "the request head exceeds 1024 bytes"))
    }

    @Test func aHeadJustInsideTheLimitIsAccepted() {
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX-Filler: \r\n\r\n"
        let filler = String(repeating: "a", count: 1024 - head.utf8.count)
        let text = "GET / HTTP/1.1\r\nHost: a\r\nX-Filler: \(filler)\r\n\r\n"
        #expect(text.utf8.count == 1024)
        #expect(parseAll(text).requests.count == 1)
        #expect(
            error("GET / HTTP/1.1\r\nHost: a\r\nX-Filler: \(filler)a\r\n\r\n")?.status == .requestHeaderFieldsTooLarge)
    }

    /// A bare LF beyond the head limit, found by the fuzzer.
    ///
    /// It was a 400 when it arrived with the rest and a 431 when the bytes before it came first. Only the head's
    /// first bytes are looked at now: 431 either way.
    @Test func whatLiesBeyondTheHeadLimitDoesNotChangeTheOutcome() {
        let limits = HTTPLimits(maxHeadBytes: 64, maxHeaderCount: 1, maxBodyBytes: 0)
        let bytes = Array(("GET /" + String(repeating: "x", count: 70) + "\n HTTP/1.1\r\n\r\n").utf8)
        let whole = parseAll(bytes, pieces: [bytes.count], limits: limits)
        #expect(whole.error?.status == .requestHeaderFieldsTooLarge)
        for size in [1, 7, 32, 64] {
            #expect(parseAll(bytes, pieces: [size], limits: limits).error == whole.error)
        }
        let chunkLine = Array(
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;" + String(repeating: "e", count: 1100)
                + "\n").utf8)
        let chunkWhole = parseAll(chunkLine, pieces: [chunkLine.count])
        #expect(chunkWhole.error == .badRequest("the chunk size line exceeds 1024 bytes"))
        #expect(parseAll(chunkLine, pieces: [100]).error == chunkWhole.error)
    }

    @Test func emptyLinesBeforeTheRequestCountAgainstTheHeadLimit() {
        let text = String(repeating: "\r\n", count: 600) + "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
        #expect(error(text)?.status == .requestHeaderFieldsTooLarge)
        #expect(parseAll("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n").requests.count == 1)
    }

    @Test func tooManyHeaderFieldsAreRefused() {
        let fields = (0..<17).map { "X-\($0): v\r\n" }.joined()
        #expect(error("GET / HTTP/1.1\r\n\(fields)\r\n")?.status == .requestHeaderFieldsTooLarge)
        let fewer = (0..<15).map { "X-\($0): v\r\n" }.joined()
        #expect(parseAll("GET / HTTP/1.1\r\nHost: a\r\n\(fewer)\r\n").requests.count == 1)
    }

    @Test func aDeclaredLengthOverTheLimitIsRefusedBeforeTheBodyArrives() {
        var parser = HTTPRequestParser(limits: Self.limits)
        parser.append(Array("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\n".utf8))
        #expect(
            Self.nextError(&parser)
                == HTTPParseError(status: .contentTooLarge, reason: "the request body exceeds 64 bytes"))
        #expect(
            error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n")?.status == .badRequest)
    }

    @Test func chunkedBodiesOverTheLimitAreRefusedAtTheChunkThatCrossesIt() {
        let chunk = String(repeating: "a", count: 40)
        let text = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n\(chunk)\r\n28\r\n"
        #expect(error(text) == HTTPParseError(status: .contentTooLarge, reason: "the request body exceeds 64 bytes"))
        let fits =
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n\(chunk)\r\n18\r\n"
            + String(repeating: "b", count: 24) + "\r\n0\r\n\r\n"
        #expect(parseAll(fits).requests.first?.body.count == 64)
    }

    @Test func aParserWithoutBodiesRefusesEveryBody() {
        let limits = HTTPLimits(maxHeadBytes: 1024, maxHeaderCount: 16, maxBodyBytes: 0)
        let refusal = HTTPParseError(status: .contentTooLarge, reason: "request bodies are not accepted")
        #expect(error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx", limits: limits) == refusal)
        #expect(error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", limits: limits) == refusal)
        #expect(parseAll("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", limits: limits).requests.count == 1)
    }

    // MARK: - State

    @Test func reportsAPartialRequestUntilItIsComplete() throws {
        var parser = HTTPRequestParser(limits: Self.limits)
        #expect(!parser.hasPartialRequest)
        parser.append(Array("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n".utf8))
        let request1 = try parser.nextRequest()
        #expect(request1 == nil)
        #expect(parser.hasPartialRequest)
        parser.append(Array("ok".utf8))
        let request2 = try parser.nextRequest()
        #expect(request2?.body == Array("ok".utf8))
        #expect(!parser.hasPartialRequest)
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func asksForContinueOnceWhenTheBodyHasNotStarted() throws {
        var parser = HTTPRequestParser(limits: Self.limits)
        parser.append(Array("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8))
        let request3 = try parser.nextRequest()
        #expect(request3 == nil)
        let asked4 = parser.takeContinueRequest()
        #expect(asked4)
        let asked5 = parser.takeContinueRequest()
        #expect(!asked5)
        parser.append(Array("ok".utf8))
        let request6 = try parser.nextRequest()
        #expect(request6?.body == Array("ok".utf8))
        parser.append(Array("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\no".utf8))
        let request7 = try parser.nextRequest()
        #expect(request7 == nil)
        let asked8 = parser.takeContinueRequest()
        #expect(!asked8)
    }
}

@Suite struct HTTPServerResponseTests {
    @Test func serializesStatusHeadersLengthAndBody() {
        let response = HTTPServerResponse(status: .ok, contentType: "text/plain", text: "hi")
        #expect(
            String(decoding: response.serialized(keepAlive: true), as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nhi"
        )
        #expect(
            String(decoding: response.serialized(keepAlive: false, includeBody: false), as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")
    }

    @Test func noContentHasNoLength() {
        let text = String(decoding: HTTPServerResponse(status: .noContent).serialized(keepAlive: true), as: UTF8.self)
        #expect(text == "HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n")
    }

    @Test func headerValuesCannotEndTheHead() {
        let response = HTTPServerResponse(
            status: .ok, headers: [HTTPHeader(name: "X-Echo", value: "a\r\nSet-Cookie: b\u{0}")])
        let text = String(decoding: response.serialized(keepAlive: true), as: UTF8.self)
        #expect(text.contains("X-Echo: a  Set-Cookie: b \r\n"))
        #expect(!text.contains("\r\nSet-Cookie"))
    }
}
