// Pure Swift, no imports: scripts/fuzz.sh compiles this file with the parser into the parser's fuzzer.

/// One header field as it arrived (name case preserved, value without surrounding whitespace).
public struct HTTPHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// The protocol versions a request may name.
public enum HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    case http10
    case http11
    case http2

    public var description: String {
        switch self {
        case .http10: "HTTP/1.0"
        case .http11: "HTTP/1.1"
        case .http2: "HTTP/2"
        }
    }
}

/// One complete HTTP/1.x request: head and body (de-chunked).
public struct HTTPServerRequest: Sendable, Equatable {
    public var method: String
    /// The request target as sent ("/metrics?x=1"): always origin-form, starting with "/".
    public var target: String
    public var version: HTTPVersion
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Whether the connection stays open after the response (HTTP/1.1 unless `Connection: close`; HTTP/1.0 only
    /// with `Connection: keep-alive`).
    public var keepAlive: Bool

    public init(
        method: String, target: String, version: HTTPVersion = .http11, headers: [HTTPHeader] = [],
        body: [UInt8] = [], keepAlive: Bool = true
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
    }

    /// The target without its query string.
    public var path: Substring { target.prefix { $0 != "?" } }

    /// The first value of header `name` (ASCII case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { HTTPHeader.sameName($0.name, name) }?.value
    }

    /// Every value of header `name`, in order.
    public func headers(named name: String) -> [String] {
        headers.filter { HTTPHeader.sameName($0.name, name) }.map(\.value)
    }
}

extension HTTPHeader {
    /// Whether two header names are equal ignoring ASCII case (names are tokens: ASCII only).
    public static func sameName(_ left: String, _ right: String) -> Bool {
        let left = left.utf8
        let right = right.utf8
        guard left.count == right.count else { return false }
        return zip(left, right).allSatisfy { lowercased($0) == lowercased($1) }
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }
}

/// A response status: code and reason phrase.
public struct HTTPStatus: Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var reason: String

    public init(code: Int, reason: String) {
        self.code = code
        self.reason = reason
    }

    /// The status `code` with its standard reason phrase ("Unknown" for codes not listed here).
    public init(code: Int) {
        self.init(code: code, reason: Self.reasons[code] ?? "Unknown")
    }

    public var description: String { "\(code) \(reason)" }

    public static let `continue` = HTTPStatus(code: 100)
    public static let ok = HTTPStatus(code: 200)
    public static let noContent = HTTPStatus(code: 204)
    public static let badRequest = HTTPStatus(code: 400)
    public static let forbidden = HTTPStatus(code: 403)
    public static let notFound = HTTPStatus(code: 404)
    public static let methodNotAllowed = HTTPStatus(code: 405)
    public static let requestTimeout = HTTPStatus(code: 408)
    public static let contentTooLarge = HTTPStatus(code: 413)
    public static let unsupportedMediaType = HTTPStatus(code: 415)
    public static let tooManyRequests = HTTPStatus(code: 429)
    public static let requestHeaderFieldsTooLarge = HTTPStatus(code: 431)
    public static let internalServerError = HTTPStatus(code: 500)
    public static let notImplemented = HTTPStatus(code: 501)
    public static let serviceUnavailable = HTTPStatus(code: 503)
    public static let gatewayTimeout = HTTPStatus(code: 504)
    public static let httpVersionNotSupported = HTTPStatus(code: 505)

    private static let reasons: [Int: String] = [
        100: "Continue", 200: "OK", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
        404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict",
        413: "Content Too Large", 415: "Unsupported Media Type", 429: "Too Many Requests",
        431: "Request Header Fields Too Large", 499: "Client Closed Request", 500: "Internal Server Error",
        501: "Not Implemented", 503: "Service Unavailable", 504: "Gateway Timeout",
        505: "HTTP Version Not Supported",
    ]
}

/// A complete response; `serialized` adds `Content-Length` and `Connection`, so keep-alive clients know where it
/// ends.
public struct HTTPServerResponse: Sendable, Equatable {
    public var status: HTTPStatus
    /// Headers besides `Content-Length` and `Connection`, which serializing adds.
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// The server closes the connection after this response, whatever the request asked.
    public var closesConnection: Bool

    public init(status: HTTPStatus, headers: [HTTPHeader] = [], body: [UInt8] = [], closesConnection: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.closesConnection = closesConnection
    }

    /// A response whose body is `text` with content type `contentType`.
    public init(status: HTTPStatus, contentType: String, text: String, headers: [HTTPHeader] = []) {
        self.init(
            status: status, headers: [HTTPHeader(name: "Content-Type", value: contentType)] + headers,
            body: Array(text.utf8))
    }

    /// The first value of header `name` (ASCII case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { HTTPHeader.sameName($0.name, name) }?.value
    }

    /// The bytes on the wire; `includeBody` false for HEAD (the length is still the body's).
    ///
    /// Header values are written with any CR, LF or NUL replaced by a space, so no value can end the head early.
    public func serialized(keepAlive: Bool, includeBody: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + headers.count * 40 + (includeBody ? body.count : 0))
        out.append(contentsOf: "HTTP/1.1 \(status.code) \(status.reason)\r\n".utf8)
        for header in headers {
            Self.appendField(header.name, header.value, to: &out)
        }
        // RFC 9110 §8.6: no Content-Length in 1xx and 204 responses.
        if status.code >= 200, status.code != 204 {
            Self.appendField("Content-Length", String(body.count), to: &out)
        }
        if status.code >= 200 { Self.appendField("Connection", keepAlive ? "keep-alive" : "close", to: &out) }
        out.append(contentsOf: [0x0D, 0x0A])
        if includeBody { out.append(contentsOf: body) }
        return out
    }

    private static func appendField(_ name: String, _ value: String, to out: inout [UInt8]) {
        for byte in name.utf8 { out.append(isFieldBreaking(byte) || byte == 0x3A ? 0x20 : byte) }
        out.append(contentsOf: [0x3A, 0x20])
        for byte in value.utf8 { out.append(isFieldBreaking(byte) ? 0x20 : byte) }
        out.append(contentsOf: [0x0D, 0x0A])
    }

    private static func isFieldBreaking(_ byte: UInt8) -> Bool {
        byte == 0x0D || byte == 0x0A || byte == 0x00
    }
}
