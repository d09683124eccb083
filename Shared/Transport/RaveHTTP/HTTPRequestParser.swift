// Pure Swift, no imports: scripts/fuzz.sh compiles this file with HTTPMessage.swift into the parser's fuzzer.

/// How much of a request a parser accepts before refusing it.
public struct HTTPLimits: Sendable, Hashable {
    /// Largest request head (request line and header fields, with the blank line), in bytes; larger: 431.
    public var maxHeadBytes: Int
    /// Most header fields; more: 431.
    public var maxHeaderCount: Int
    /// Largest body (de-chunked), in bytes (larger: 413); 0 refuses every body.
    public var maxBodyBytes: Int
    /// Longest chunk-size line (size and extensions), in bytes; longer: 400.
    public var maxChunkLineBytes: Int
    /// Whether an HTTP/1.1 request without a `Host` is refused (RFC 9112 §3.2).
    ///
    /// A port for hand-written probes may waive it; two `Host` fields are refused either way.
    public var requiresHost: Bool

    public init(
        maxHeadBytes: Int = 16 << 10, maxHeaderCount: Int = 100, maxBodyBytes: Int = 0, requiresHost: Bool = true
    ) {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
        self.maxChunkLineBytes = 1024
        self.requiresHost = requiresHost
    }
}

/// Why a request could not be parsed: the status to answer with, and a reason in our words.
///
/// After a parse error the connection must close: the framing of what follows is unknown.
public struct HTTPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: HTTPStatus
    public var reason: String

    public init(status: HTTPStatus, reason: String) {
        self.status = status
        self.reason = reason
    }

    public static func badRequest(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: .badRequest, reason: reason)
    }

    public var description: String { "\(status): \(reason)" }
}

/// An incremental HTTP/1.1 request parser with bodies, for servers: bytes in, complete requests out.
///
/// Feed bytes as they arrive with `append`, then call `nextRequest()` until it returns nil (more bytes needed);
/// requests sent back to back (pipelined) come out one by one. Bodies come with `Content-Length` or
/// `Transfer-Encoding: chunked` (extensions and trailers are read and ignored). It refuses what lets two parsers
/// disagree about where a request ends (request smuggling): both framing headers together, more than one
/// `Content-Length` or a malformed one, a transfer coding other than `chunked` (or any with HTTP/1.0), line folding
/// (obs-fold), a bare CR or LF anywhere in the framing (lines end with CRLF only), whitespace before a field's
/// colon, control characters in a field, a malformed chunk size or one longer than `maxChunkLineBytes`, chunk data
/// not followed by CRLF, and an HTTP/1.1 request without exactly one `Host` (`HTTPLimits.requiresHost`). Every limit
/// counts from the first byte.
public struct HTTPRequestParser: Sendable {
    public var limits: HTTPLimits

    private enum State: Sendable {
        case head
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(bytes: Int)
        case failed(HTTPParseError)
    }

    private var buffer: [UInt8] = []
    /// The first byte not yet consumed.
    private var start = 0
    /// Where the search for the end of the head resumes.
    private var scanned = 0
    /// Bytes of empty lines skipped before the request line, counted against the head limit.
    private var skipped = 0
    private var state = State.head
    /// The request whose body is being read.
    private var pending: HTTPServerRequest?
    private var continueRequested = false

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// Bytes received and not yet returned as part of a request.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Whether some bytes of a request that is not complete yet have arrived (its head or body is under way).
    public var hasPartialRequest: Bool {
        if case .head = state { return start < buffer.count || skipped > 0 }
        return true
    }

    /// True once per request whose head asked `Expect: 100-continue` and whose body has not started arriving:
    /// the server may send `100 Continue` now.
    public mutating func takeContinueRequest() -> Bool {
        defer { continueRequested = false }
        guard continueRequested, pending != nil, pending?.body.isEmpty == true else { return false }
        return true
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete request, nil when more bytes are needed, or the error to answer with (the parser then
    /// stays failed).
    public mutating func nextRequest() throws(HTTPParseError) -> HTTPServerRequest? {
        if case .failed(let error) = state { throw error }
        do {
            let request = try advance()
            compact()
            return request
        } catch {
            state = .failed(error)
            continueRequested = false
            throw error
        }
    }

    // MARK: - States

    private mutating func advance() throws(HTTPParseError) -> HTTPServerRequest? {
        while true {
            switch state {
            case .head:
                guard let request = try readHead() else { return nil }
                if let complete = request { return complete }
            case .fixedBody(let remaining):
                let taken = take(upTo: remaining)
                if taken < remaining {
                    state = .fixedBody(remaining: remaining - taken)
                    return nil
                }
                return finish()
            case .chunkSize:
                guard let line = try readChunkSizeLine() else { return nil }
                let size = try Self.chunkSize(line)
                if size == 0 {
                    state = .trailers(bytes: 0)
                } else {
                    let received = pending?.body.count ?? 0
                    guard size <= limits.maxBodyBytes - received else { throw bodyTooLarge() }
                    state = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let taken = take(upTo: remaining)
                if taken < remaining {
                    state = .chunkData(remaining: remaining - taken)
                    return nil
                }
                state = .chunkDataEnd
            case .chunkDataEnd:
                guard bufferedByteCount >= 2 else {
                    if bufferedByteCount == 1, buffer[start] != Self.cr {
                        throw .badRequest("chunk data not followed by CRLF")
                    }
                    return nil
                }
                guard buffer[start] == Self.cr, buffer[start + 1] == Self.lf else {
                    throw .badRequest("chunk data not followed by CRLF")
                }
                start += 2
                state = .chunkSize
            case .trailers(let bytes):
                guard let line = try readLine(limit: limits.maxHeadBytes - bytes, what: "trailer section") else {
                    return nil
                }
                if line.isEmpty { return finish() }
                _ = try Self.field(line)
                state = .trailers(bytes: bytes + line.count + 2)
            case .failed(let error):
                throw error
            }
        }
    }

    /// Moves up to `count` body bytes from the buffer into the pending request; returns how many it moved.
    private mutating func take(upTo count: Int) -> Int {
        let taken = min(count, bufferedByteCount)
        if taken > 0 {
            pending?.body.append(contentsOf: buffer[start..<(start + taken)])
            start += taken
            continueRequested = false
        }
        return taken
    }

    private mutating func finish() -> HTTPServerRequest? {
        state = .head
        scanned = start
        continueRequested = false
        defer { pending = nil }
        return pending
    }

    private func bodyTooLarge() -> HTTPParseError {
        limits.maxBodyBytes == 0
            ? HTTPParseError(status: .contentTooLarge, reason: "request bodies are not accepted")
            : HTTPParseError(
                status: .contentTooLarge, reason: "the request body exceeds \(limits.maxBodyBytes) bytes")
    }

    // MARK: - Head

    /// Reads a head once it is complete.
    ///
    /// Returns nil when more bytes are needed; `.some(nil)` when the head was read and its body follows;
    /// `.some(request)` for a request without a body.
    private mutating func readHead() throws(HTTPParseError) -> HTTPServerRequest?? {
        // RFC 9112 §2.2: empty lines before the request line are ignored (they count against the head limit).
        while scanned == start, bufferedByteCount >= 1, buffer[start] == Self.cr || buffer[start] == Self.lf {
            guard buffer[start] == Self.cr else { throw .badRequest("a line ends with a bare LF; lines end with CRLF") }
            guard bufferedByteCount >= 2 else { return nil }
            guard buffer[start + 1] == Self.lf else { throw .badRequest("a bare CR in the request head") }
            start += 2
            scanned = start
            skipped += 2
            guard skipped <= limits.maxHeadBytes else { throw headTooLarge() }
        }
        guard let end = try findHeadEnd(within: limits.maxHeadBytes - skipped) else { return nil }
        // The head's lines without the final empty line's CRLF; every line ends with CRLF.
        let head = buffer[start..<(end - 2)]
        start = end
        scanned = end
        skipped = 0
        let request = try parseHead(head)
        try frame(request)
        switch state {
        case .head: return .some(request)
        default:
            pending = request
            return .some(nil)
        }
    }

    /// The index after the CRLF CRLF ending the head, looked for within the head's first `allowed` bytes.
    ///
    /// Refuses bare CR and LF on the way, and a head that does not end within `allowed` bytes. Only those bytes are
    /// looked at, so the outcome never depends on how the bytes arrived.
    private mutating func findHeadEnd(within allowed: Int) throws(HTTPParseError) -> Int? {
        let limit = start + allowed
        var index = max(scanned, start)
        while index < min(buffer.count, limit) {
            let byte = buffer[index]
            if byte == Self.lf {
                guard index > start, buffer[index - 1] == Self.cr else {
                    throw .badRequest("a line ends with a bare LF; lines end with CRLF")
                }
                if index - 3 >= start, buffer[index - 2] == Self.lf, buffer[index - 3] == Self.cr {
                    return index + 1
                }
            } else if byte == Self.cr {
                guard index + 1 < buffer.count else { break }
                guard buffer[index + 1] == Self.lf else { throw .badRequest("a bare CR in the request head") }
            }
            index += 1
        }
        scanned = index
        if index >= limit { throw headTooLarge() }
        return nil
    }

    private func headTooLarge() -> HTTPParseError {
        HTTPParseError(
            status: .requestHeaderFieldsTooLarge, reason: "the request head exceeds \(limits.maxHeadBytes) bytes")
    }

    private func parseHead(_ head: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPServerRequest {
        let lines = Self.lines(head)
        guard let requestLine = lines.first else { throw .badRequest("a request needs a request line") }
        let parts = requestLine.split(separator: Self.space, maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3, let method = Self.token(parts[0]), let target = Self.visible(parts[1]) else {
            throw .badRequest("malformed request line; expected \"METHOD /path HTTP/1.1\"")
        }
        let version: HTTPVersion
        if parts[2].elementsEqual("HTTP/1.1".utf8) {
            version = .http11
        } else if parts[2].elementsEqual("HTTP/1.0".utf8) {
            version = .http10
        } else if parts[2].count == 8, parts[2].starts(with: "HTTP/".utf8) {
            throw HTTPParseError(status: .httpVersionNotSupported, reason: "only HTTP/1.0 and HTTP/1.1 are supported")
        } else {
            throw .badRequest("malformed request line; expected \"METHOD /path HTTP/1.1\"")
        }
        guard target.hasPrefix("/") else { throw .badRequest("the request target must be a path starting with /") }
        guard lines.count - 1 <= limits.maxHeaderCount else {
            throw HTTPParseError(
                status: .requestHeaderFieldsTooLarge, reason: "more than \(limits.maxHeaderCount) header fields")
        }
        var headers: [HTTPHeader] = []
        headers.reserveCapacity(lines.count - 1)
        for line in lines.dropFirst() { headers.append(try Self.field(line)) }
        var request = HTTPServerRequest(
            method: method, target: target, version: version, headers: headers, body: [], keepAlive: true)
        request.keepAlive = Self.keepsAlive(request)
        return request
    }

    /// Decides how the body is delimited, and refuses ambiguous framing.
    private mutating func frame(_ request: HTTPServerRequest) throws(HTTPParseError) {
        let lengths = request.headers(named: "Content-Length")
        let codings = request.headers(named: "Transfer-Encoding")
        let hosts = request.headers(named: "Host").count
        if hosts > 1 || (hosts == 0 && request.version == .http11 && limits.requiresHost) {
            throw .badRequest("an HTTP/1.1 request needs exactly one Host header")
        }
        let expectsContinue =
            request.version == .http11
            && request.headers(named: "Expect").contains { HTTPHeader.sameName($0, "100-continue") }
        if !codings.isEmpty {
            guard lengths.isEmpty else {
                throw .badRequest("a request may not have both Content-Length and Transfer-Encoding")
            }
            guard request.version == .http11 else {
                throw .badRequest("HTTP/1.0 requests cannot use Transfer-Encoding")
            }
            guard codings.count == 1, HTTPHeader.sameName(codings[0], "chunked") else {
                throw .badRequest("the only transfer coding accepted is \"chunked\"")
            }
            guard limits.maxBodyBytes > 0 else { throw bodyTooLarge() }
            state = .chunkSize
            continueRequested = expectsContinue
            return
        }
        guard !lengths.isEmpty else { return }
        guard lengths.count == 1 else { throw .badRequest("a request may have only one Content-Length") }
        let text = lengths[0].utf8
        guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw .badRequest("Content-Length must be a decimal number of bytes")
        }
        let length = text.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard length <= limits.maxBodyBytes else { throw bodyTooLarge() }
        if length > 0 {
            state = .fixedBody(remaining: length)
            continueRequested = expectsContinue
        }
    }

    private static func keepsAlive(_ request: HTTPServerRequest) -> Bool {
        var close = false
        var keepAlive = false
        for value in request.headers(named: "Connection") {
            for option in value.split(separator: ",") {
                let trimmed = String(option.filter { $0 != " " && $0 != "\t" })
                if HTTPHeader.sameName(trimmed, "close") { close = true }
                if HTTPHeader.sameName(trimmed, "keep-alive") { keepAlive = true }
            }
        }
        if close { return false }
        return request.version == .http11 || keepAlive
    }

    // MARK: - Chunked bodies

    /// The next chunk-size line without its CRLF, nil while it is incomplete.
    private mutating func readChunkSizeLine() throws(HTTPParseError) -> ArraySlice<UInt8>? {
        try readLine(limit: limits.maxChunkLineBytes, what: "chunk size line")
    }

    /// The next CRLF-terminated line (without the CRLF).
    ///
    /// Refuses bare CR and LF and lines over `limit` bytes (CRLF included). Only the first `limit` bytes are looked
    /// at, so the outcome never depends on how the bytes arrived.
    private mutating func readLine(limit: Int, what: String) throws(HTTPParseError) -> ArraySlice<UInt8>? {
        // The CR may be at most at `start + limit - 2`, its LF right after.
        let end = start + limit - 1
        var index = start
        while index < min(buffer.count, end) {
            let byte = buffer[index]
            if byte == Self.lf { throw .badRequest("a line ends with a bare LF; lines end with CRLF") }
            if byte == Self.cr {
                guard index + 1 < buffer.count else { return nil }
                guard buffer[index + 1] == Self.lf else { throw .badRequest("a bare CR in the \(what)") }
                let line = buffer[start..<index]
                start = index + 2
                return line
            }
            index += 1
        }
        if index >= end { throw .badRequest("the \(what) exceeds \(limit) bytes") }
        return nil
    }

    /// A chunk-size line's size: 1…15 hex digits, optionally followed by extensions (ignored).
    static func chunkSize(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> Int {
        var size = 0
        var digits = 0
        var index = line.startIndex
        while index < line.endIndex, let value = hexValue(line[index]) {
            guard digits < 15 else { throw .badRequest("a chunk size has more than 15 hex digits") }
            size = size << 4 | value
            digits += 1
            index += 1
        }
        guard digits > 0 else { throw .badRequest("a chunk size must start with hex digits") }
        var rest = line[index...].drop { $0 == space || $0 == tab }
        guard !rest.isEmpty else {
            guard index == line.endIndex else { throw .badRequest("whitespace after a chunk size") }
            return size
        }
        guard rest.first == semicolon else { throw .badRequest("a malformed chunk size") }
        rest = rest.dropFirst()
        guard rest.allSatisfy({ isFieldValueByte($0) }) else {
            throw .badRequest("a control character in a chunk extension")
        }
        return size
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: Int(byte - 0x30)
        case 0x41...0x46: Int(byte - 0x41 + 10)
        case 0x61...0x66: Int(byte - 0x61 + 10)
        default: nil
        }
    }

    // MARK: - Lines and fields

    /// The lines of a head whose every line ends with CRLF; it holds no bare CR or LF (checked while finding its
    /// end), so cutting at each LF and dropping the CR before it is exact.
    private static func lines(_ head: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        lines.reserveCapacity(16)
        var start = head.startIndex
        for index in head.indices where head[index] == lf {
            lines.append(head[start..<index - 1])
            start = index + 1
        }
        return lines
    }

    /// One header (or trailer) field line.
    private static func field(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPHeader {
        guard let first = line.first, first != space, first != tab else {
            throw .badRequest("a header line starts with whitespace (obsolete line folding is not accepted)")
        }
        guard let colon = line.firstIndex(of: colon), let name = token(line[..<colon]) else {
            throw .badRequest("a malformed header field; expected \"Name: value\"")
        }
        var value = line[(colon + 1)...]
        while let first = value.first, first == space || first == tab { value.removeFirst() }
        while let last = value.last, last == space || last == tab { value.removeLast() }
        guard value.allSatisfy({ isFieldValueByte($0) }) else {
            throw .badRequest("a control character in header \(name)")
        }
        return HTTPHeader(name: name, value: String(decoding: value, as: UTF8.self))
    }

    /// Visible ASCII, obs-text, space and tab: what a field value may hold.
    private static func isFieldValueByte(_ byte: UInt8) -> Bool {
        (byte >= 0x20 && byte != 0x7F) || byte == tab
    }

    /// The bytes as a string when they form an RFC 9110 token (method and header names).
    private static func token(_ bytes: ArraySlice<UInt8>) -> String? {
        guard !bytes.isEmpty, bytes.allSatisfy(isTokenByte) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
        default: false
        }
    }

    /// The bytes as a string when they are non-empty visible ASCII (the request target).
    private static func visible(_ bytes: ArraySlice<UInt8>) -> String? {
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Drops consumed bytes once they are most of the buffer, so a long keep-alive connection does not grow it.
    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 << 10)
            scanned = 0
            start = 0
        } else if start > 4096, start * 2 > buffer.count {
            buffer.removeFirst(start)
            scanned -= start
            start = 0
        }
    }

    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A
    private static let space: UInt8 = 0x20
    private static let tab: UInt8 = 0x09
    private static let colon: UInt8 = 0x3A
    private static let semicolon: UInt8 = 0x3B
}
