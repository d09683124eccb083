import Testing

@testable import RaveRuntime

@Suite struct HTTPRequestParserTests {
    func parse(_ text: String, limit: Int = 8192) throws(HTTPParseFailure) -> HTTPRequest? {
        var parser = HTTPRequestParser()
        parser.maxHeadSize = limit
        parser.append(Array(text.utf8))
        return try parser.nextRequest()
    }

    @Test func parsesRequestLineAndHeaders() throws {
        let request = try #require(try parse("GET /metrics?name=x HTTP/1.1\r\nHost: a\r\nAccept:  text/plain \r\n\r\n"))
        #expect(request.method == "GET")
        #expect(request.path == "/metrics")
        #expect(request.target == "/metrics?name=x")
        #expect(request.header("accept") == "text/plain")
        #expect(request.keepAlive)
    }

    @Test func keepAliveFollowsVersionAndConnectionHeader() throws {
        #expect(try parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")?.keepAlive == false)
        #expect(try parse("GET / HTTP/1.0\r\n\r\n")?.keepAlive == false)
        #expect(try parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")?.keepAlive == true)
    }

    @Test func acceptsBareLineFeedsAndBytesSplitAnywhere() throws {
        var parser = HTTPRequestParser()
        let text = Array("\r\nGET /healthz HTTP/1.1\nHost: x\n\nGET /readyz HTTP/1.1\r\n\r\n".utf8)
        var requests: [HTTPRequest] = []
        for byte in text {
            parser.append([byte])
            while let request = try parser.nextRequest() { requests.append(request) }
        }
        #expect(requests.map(\.path) == ["/healthz", "/readyz"])
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func waitsForTheRestOfTheHead() throws {
        #expect(try parse("GET /metrics HTTP/1.1\r\nHost: a\r\n") == nil)
    }

    @Test(arguments: [
        "GET /metrics\r\n\r\n",
        "GET  /metrics HTTP/1.1\r\n\r\n",
        "GET metrics HTTP/1.1\r\n\r\n",
        "G(T / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Header: x\r\n\r\n",
        "GET / HTTP/1.1\r\nNoColon\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\u{1}b\r\n\r\n",
    ])
    func malformedRequestsAreBadRequests(text: String) {
        #expect(throws: HTTPParseFailure.self) { try parse(text) }
        #expect((try? parse(text)) == nil)
        do {
            _ = try parse(text)
        } catch {
            #expect(error.status == .badRequest)
        }
    }

    @Test func oversizedHeadsAreRefusedBeforeTheyEnd() {
        let text = "GET / HTTP/1.1\r\nX-Filler: " + String(repeating: "a", count: 300)
        #expect(
            throws: HTTPParseFailure(status: .requestHeaderFieldsTooLarge, reason: "request head exceeds 256 bytes")
        ) {
            try parse(text, limit: 256)
        }
    }

    @Test func bodiesAndOtherVersionsAreRefused() {
        #expect(throws: HTTPParseFailure(status: .payloadTooLarge, reason: "request bodies are not accepted")) {
            try parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
        }
        #expect(throws: HTTPParseFailure.self) { try parse("GET / HTTP/2.0\r\n\r\n") }
    }
}
