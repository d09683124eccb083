import COpenSSL
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A small SMTP server on 127.0.0.1 for tests: it accepts every mail (or refuses them while `refusing` is set) and
/// keeps what it received, so a test reads the mails a service really sent over a real socket.
///
/// It speaks the part of ESMTP senders use: EHLO/HELO, AUTH PLAIN, MAIL, RCPT, DATA (dot-unstuffing), RSET, NOOP
/// and QUIT, and STARTTLS when it has a certificate. Connections are served one at a time on a thread of its own.
public final class SMTPSink: Sendable {
    /// One received mail.
    public struct Mail: Sendable, Hashable {
        public var envelopeFrom: String
        public var recipients: [String]
        /// The message as received (CRLF line ends, dots unstuffed).
        public var data: String
        /// The user name of AUTH PLAIN, when the client authenticated.
        public var authenticatedAs: String?
        /// The TLS version the mail came over after STARTTLS ("TLSv1.3"); nil when it came in the clear.
        public var tlsVersion: String?

        /// A mail as received; tests also build one from a rendered message to read it back.
        public init(
            envelopeFrom: String, recipients: [String], data: String, authenticatedAs: String?,
            tlsVersion: String? = nil
        ) {
            self.envelopeFrom = envelopeFrom
            self.recipients = recipients
            self.data = data
            self.authenticatedAs = authenticatedAs
            self.tlsVersion = tlsVersion
        }

        /// A header's raw value (unfolded), by case-insensitive name.
        public func header(_ name: String) -> String? {
            let head = data.components(separatedBy: "\r\n\r\n").first ?? ""
            let unfolded = head.replacingOccurrences(of: "\r\n ", with: " ")
            for line in unfolded.components(separatedBy: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                if line[..<colon].lowercased() == name.lowercased() {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }

        /// The subject with RFC 2047 encoded words (UTF-8, base64) decoded.
        public var subject: String {
            let raw = header("Subject") ?? ""
            guard raw.hasPrefix("=?") else { return raw }
            return raw.split(separator: " ").map { word -> String in
                let parts = word.split(separator: "?")
                guard parts.count == 5, parts[2].uppercased() == "B", let data = Data(base64Encoded: String(parts[3]))
                else { return String(word) }
                return String(decoding: data, as: UTF8.self)
            }.joined()
        }

        /// The body, decoded when base64.
        public var body: String {
            let text = data.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
            guard header("Content-Transfer-Encoding")?.lowercased() == "base64" else { return text }
            let joined = text.replacingOccurrences(of: "\r\n", with: "")
            return Data(base64Encoded: joined).map { String(decoding: $0, as: UTF8.self) } ?? text
        }
    }

    public let port: Int
    private let listener: Int32
    private let state = Mutex<(mails: [Mail], refusing: Bool, stopped: Bool)>(([], false, false))
    /// The server side of STARTTLS, when the sink offers it.
    private let tls: SinkTLS?

    /// Starts listening on 127.0.0.1 (an unused port); with `startTLS`, a certificate chain and key (PEM paths),
    /// it offers STARTTLS.
    public init(startTLS: (chain: String, key: String)? = nil) throws {
        tls = try startTLS.map { try SinkTLS(chain: $0.chain, key: $0.key) }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LoopbackSocketError("socket: errno \(errno)") }
        var yes: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw LoopbackSocketError("cannot listen for SMTP: errno \(errno)")
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "smtp-sink"
        thread.start()
    }

    /// `smtp://127.0.0.1:<port>`.
    public var url: String { "smtp://127.0.0.1:\(port)" }

    /// The mails received so far.
    public var mails: [Mail] { state.withLock { $0.mails } }

    /// While true, DATA is answered 451 (a temporary failure), so senders retry.
    public func setRefusing(_ refusing: Bool) {
        state.withLock { $0.refusing = refusing }
    }

    /// Waits (up to `timeout`) until a mail to `recipient` beyond the first `after` of them has arrived.
    public func waitForMail(to recipient: String, after: Int = 0, timeout: Duration = .seconds(20)) async throws -> Mail
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let received = mails.filter { $0.recipients.contains(recipient.lowercased()) }
            if received.count > after { return received[after] }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw LoopbackSocketError("no mail to \(recipient) arrived within \(timeout)")
    }

    /// Mails received for `recipient`.
    public func mails(to recipient: String) -> [Mail] {
        mails.filter { $0.recipients.contains(recipient.lowercased()) }
    }

    /// Stops accepting connections.
    public func stop() {
        state.withLock { $0.stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }

    private func acceptLoop() {
        while !state.withLock({ $0.stopped }) {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            var interval = timeval(tv_sec: 10, tv_usec: 0)
            _ = setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
            serve(connection)
            Glibc.close(connection)
        }
    }

    private func serve(_ connection: Int32) {
        var buffer: [UInt8] = []
        var session: SinkTLS.Session?
        defer { session?.close() }
        func send(_ line: String) {
            let bytes = Array((line + "\r\n").utf8)
            if let session {
                session.write(bytes)
                return
            }
            _ = bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        func readLine() -> String? {
            while true {
                if let end = buffer.firstIndex(of: 10) {
                    var line = Array(buffer[..<end])
                    buffer.removeSubrange(...end)
                    if line.last == 13 { line.removeLast() }
                    return String(decoding: line, as: UTF8.self)
                }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count =
                    session?.read(into: &chunk)
                    ?? chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return nil }
                buffer += chunk[..<count]
            }
        }
        func address(_ argument: Substring) -> String {
            let text = argument.drop { $0 != "<" }.dropFirst().prefix { $0 != ">" }
            return String(text).lowercased()
        }
        send("220 rave-smtp-sink ESMTP")
        var from = ""
        var recipients: [String] = []
        var user: String?
        while let line = readLine() {
            let verb = line.prefix(4).uppercased()
            switch verb {
            case "EHLO":
                let offer = tls != nil && session == nil ? "250-STARTTLS\r\n" : ""
                send("250-rave-smtp-sink\r\n\(offer)250-AUTH PLAIN\r\n250 8BITMIME")
            case "STAR" where line.uppercased() == "STARTTLS" && tls != nil && session == nil:
                send("220 ready to start TLS")
                // RFC 3207: the client starts over with EHLO; whatever it sent before counts for nothing.
                buffer = []
                guard let accepted = tls?.accept(connection) else { return }
                session = accepted
                (from, recipients, user) = ("", [], nil)
            case "HELO", "NOOP": send("250 ok")
            case "AUTH":
                let parts = line.split(separator: " ")
                var response = parts.count == 3 ? String(parts[2]) : nil
                if parts.count == 2 {
                    // No initial response: ask for it.
                    send("334 ")
                    response = readLine()
                }
                let decoded = response.flatMap { Data(base64Encoded: $0) }
                let fields = decoded.map { $0.split(separator: 0, omittingEmptySubsequences: false) } ?? []
                user = fields.count == 3 ? String(decoding: fields[1], as: UTF8.self) : nil
                send(user == nil ? "501 malformed AUTH PLAIN" : "235 authenticated")
            case "MAIL":
                from = address(line.dropFirst(5))
                recipients = []
                send("250 ok")
            case "RCPT":
                recipients.append(address(line.dropFirst(5)))
                send("250 ok")
            case "DATA":
                send("354 end with <CRLF>.<CRLF>")
                var lines: [String] = []
                while let dataLine = readLine(), dataLine != "." {
                    lines.append(dataLine.hasPrefix(".") ? String(dataLine.dropFirst()) : dataLine)
                }
                let mail = Mail(
                    envelopeFrom: from, recipients: recipients, data: lines.joined(separator: "\r\n"),
                    authenticatedAs: user, tlsVersion: session?.version)
                let refused = state.withLock { state -> Bool in
                    guard !state.refusing else { return true }
                    state.mails.append(mail)
                    return false
                }
                send(refused ? "451 try again later" : "250 queued")
            case "RSET":
                from = ""
                recipients = []
                send("250 ok")
            case "QUIT":
                send("221 bye")
                return
            default: send("502 not implemented")
            }
        }
    }
}

/// The sink's STARTTLS: one server context, and a session per upgraded connection (used on the sink's thread only).
private final class SinkTLS: Sendable {
    /// The context is configured once in `init` and only read afterwards; OpenSSL contexts are safe to share then.
    nonisolated(unsafe) private let context: OpaquePointer

    init(chain: String, key: String) throws {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw LoopbackSocketError("SSL_CTX_new failed") }
        guard SSL_CTX_use_certificate_chain_file(context, chain) == 1,
            SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1
        else {
            SSL_CTX_free(context)
            throw LoopbackSocketError("the SMTP sink cannot load \(chain) and \(key)")
        }
        self.context = context
    }

    deinit { SSL_CTX_free(context) }

    /// The server side of the handshake on `descriptor`; nil when it failed (the client gave up, or refused us).
    func accept(_ descriptor: Int32) -> Session? {
        guard let ssl = SSL_new(context) else { return nil }
        guard SSL_set_fd(ssl, descriptor) == 1, SSL_accept(ssl) == 1 else {
            SSL_free(ssl)
            return nil
        }
        return Session(ssl: ssl)
    }

    struct Session {
        let ssl: OpaquePointer

        var version: String { String(cString: SSL_get_version(ssl)) }

        func read(into chunk: inout [UInt8]) -> Int {
            Int(chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) })
        }

        func write(_ bytes: [UInt8]) {
            _ = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        }

        func close() {
            SSL_shutdown(ssl)
            SSL_free(ssl)
        }
    }
}
