/// One HTTP/1.x request head (the admin server accepts no bodies).
struct HTTPRequest: Sendable, Equatable {
    var method: String
    /// The request target as sent ("/metrics?x=1").
    var target: String
    var version: String
    var headers: [HTTPHeader]
    /// Whether the connection stays open after the response (HTTP/1.1 unless `Connection: close`).
    var keepAlive: Bool

    /// The target without its query string.
    var path: String { String(target.prefix { $0 != "?" }) }

    /// The first value of header `name` (case-insensitive).
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

struct HTTPHeader: Sendable, Equatable {
    var name: String
    var value: String
}

/// Why a request could not be parsed: the status to answer with, and a reason for the body.
struct HTTPParseFailure: Error, Equatable {
    var status: HTTPStatus
    var reason: String

    static func badRequest(_ reason: String) -> HTTPParseFailure {
        HTTPParseFailure(status: .badRequest, reason: reason)
    }
}

/// An incremental parser for HTTP/1.x request heads, with limits so a client cannot make it buffer without end.
///
/// Feed bytes as they arrive with `append`, then call `nextRequest()` until it returns nil. Line endings may be
/// CRLF or bare LF (RFC 9112 §2.2 lets servers accept both). A request with a body is refused: the admin endpoints
/// take none, and refusing keeps the parser small.
struct HTTPRequestParser {
    /// Largest request head (request line and headers) accepted, in bytes.
    var maxHeadSize = 8192
    /// Most header fields accepted.
    var maxHeaderCount = 64

    private var buffer: [UInt8] = []
    private var scanned = 0

    /// Bytes received but not yet parsed into a request.
    var bufferedByteCount: Int { buffer.count }

    mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete request, nil when more bytes are needed, or a failure (after which the connection closes).
    mutating func nextRequest() throws(HTTPParseFailure) -> HTTPRequest? {
        guard let headEnd = findHeadEnd() else {
            if buffer.count > maxHeadSize {
                throw HTTPParseFailure(
                    status: .requestHeaderFieldsTooLarge, reason: "request head exceeds \(maxHeadSize) bytes")
            }
            return nil
        }
        guard headEnd.bodyStart <= maxHeadSize else {
            throw HTTPParseFailure(
                status: .requestHeaderFieldsTooLarge, reason: "request head exceeds \(maxHeadSize) bytes")
        }
        let head = buffer[..<headEnd.contentEnd]
        buffer.removeFirst(headEnd.bodyStart)
        scanned = 0
        return try parseHead(head)
    }

    /// Finds the blank line ending the head; returns where the head's content ends and what follows it begins.
    private mutating func findHeadEnd() -> (contentEnd: Int, bodyStart: Int)? {
        var index = max(0, scanned - 3)
        // Tolerate stray empty lines before the request line (RFC 9112 §2.2).
        while buffer.count > 0, buffer[0] == 0x0A || buffer[0] == 0x0D, scanned == 0 {
            buffer.removeFirst()
        }
        while index < buffer.count {
            if buffer[index] == 0x0A {
                // "\n\n" or "\n\r\n" ends the head.
                if index + 1 < buffer.count, buffer[index + 1] == 0x0A { return (index, index + 2) }
                if index + 2 < buffer.count, buffer[index + 1] == 0x0D, buffer[index + 2] == 0x0A {
                    return (index, index + 3)
                }
            }
            index += 1
        }
        scanned = buffer.count
        return nil
    }

    private func parseHead(_ head: ArraySlice<UInt8>) throws(HTTPParseFailure) -> HTTPRequest {
        var lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        guard !lines.isEmpty else { throw .badRequest("empty request") }
        let requestLine = lines.removeFirst()
        let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, let method = Self.token(parts[0]), let target = Self.visible(parts[1]),
            let version = Self.visible(parts[2])
        else { throw .badRequest("malformed request line") }
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            throw HTTPParseFailure(status: .httpVersionNotSupported, reason: "only HTTP/1.0 and HTTP/1.1 are supported")
        }
        guard target.hasPrefix("/") else { throw .badRequest("request target must be an absolute path") }
        guard lines.count <= maxHeaderCount else {
            throw HTTPParseFailure(
                status: .requestHeaderFieldsTooLarge, reason: "more than \(maxHeaderCount) header fields")
        }

        var headers: [HTTPHeader] = []
        for line in lines {
            guard let colon = line.firstIndex(of: 0x3A), let name = Self.token(line[..<colon]) else {
                throw .badRequest("malformed header field")
            }
            let rawValue = line[(colon + 1)...].drop { $0 == 0x20 || $0 == 0x09 }
            guard !rawValue.contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F }) else {
                throw .badRequest("control character in header \(name)")
            }
            let value = String(decoding: rawValue, as: UTF8.self)
            headers.append(
                HTTPHeader(name: name, value: String(value.reversed().drop { $0 == " " || $0 == "\t" }.reversed())))
        }

        var request = HTTPRequest(method: method, target: target, version: version, headers: headers, keepAlive: false)
        if request.header("transfer-encoding") != nil
            || (request.header("content-length").map { $0 != "0" } ?? false)
        {
            throw HTTPParseFailure(status: .payloadTooLarge, reason: "request bodies are not accepted")
        }
        let connection = request.header("connection")?.lowercased() ?? ""
        request.keepAlive = version == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        return request
    }

    /// The bytes as a string when they form an RFC 9110 token (method and header names).
    private static func token(_ bytes: ArraySlice<UInt8>) -> String? {
        let allowed: Set<UInt8> = Set("!#$%&'*+-.^_`|~".utf8)
        guard !bytes.isEmpty,
            bytes.allSatisfy({
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                    || allowed.contains($0)
            })
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The bytes as a string when they are non-empty visible ASCII (request target, version).
    private static func visible(_ bytes: ArraySlice<UInt8>) -> String? {
        guard !bytes.isEmpty, bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The response statuses the admin server uses.
struct HTTPStatus: Hashable, Sendable {
    var code: Int
    var reason: String

    static let ok = HTTPStatus(code: 200, reason: "OK")
    static let badRequest = HTTPStatus(code: 400, reason: "Bad Request")
    static let notFound = HTTPStatus(code: 404, reason: "Not Found")
    static let methodNotAllowed = HTTPStatus(code: 405, reason: "Method Not Allowed")
    static let payloadTooLarge = HTTPStatus(code: 413, reason: "Content Too Large")
    static let requestHeaderFieldsTooLarge = HTTPStatus(code: 431, reason: "Request Header Fields Too Large")
    static let serviceUnavailable = HTTPStatus(code: 503, reason: "Service Unavailable")
    static let httpVersionNotSupported = HTTPStatus(code: 505, reason: "HTTP Version Not Supported")
}

/// A complete response, serialized with `Content-Length` so keep-alive clients know where it ends.
struct HTTPResponse: Sendable {
    var status: HTTPStatus
    var contentType = "text/plain; charset=utf-8"
    var body: String
    var extraHeaders: [HTTPHeader] = []

    func serialized(keepAlive: Bool, includeBody: Bool = true) -> [UInt8] {
        let bodyBytes = Array(body.utf8)
        var head = "HTTP/1.1 \(status.code) \(status.reason)\r\n"
        head += "Content-Type: \(contentType)\r\nContent-Length: \(bodyBytes.count)\r\n"
        head += "Cache-Control: no-store\r\n"
        for header in extraHeaders { head += "\(header.name): \(header.value)\r\n" }
        head += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        return Array(head.utf8) + (includeBody ? bodyBytes : [])
    }
}
