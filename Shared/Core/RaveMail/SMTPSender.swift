import CCurl
import Foundation

/// Where and how to send mail.
public struct SMTPSettings: Sendable, Hashable {
    /// `smtps://host[:port]` (TLS from the start, port 465 by default) or `smtp://host[:port]` (port 25 by default;
    /// STARTTLS required, except to a loopback host, where it is used when the server offers it).
    public var url: String
    /// The envelope sender and `From:` address.
    public var from: String
    /// SMTP AUTH, when both are set.
    public var username: String?
    public var password: String?
    /// The whole exchange, connect to QUIT.
    public var timeout: Duration
    /// PEM bundle to trust instead of the system store.
    public var caFile: String?

    /// Creates settings; throws when the URL is not smtp:// or smtps:// with a host, or `from` is not an address.
    public init(
        url: String, from: String, username: String? = nil, password: String? = nil,
        timeout: Duration = .seconds(30), caFile: String? = nil
    ) throws(MailError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "smtp" || scheme == "smtps", let host = components.host, !host.isEmpty
        else { throw MailError("the SMTP URL must look like smtp://host:port or smtps://host:port, got \"\(url)\"") }
        guard components.user == nil, components.password == nil else {
            throw MailError("the SMTP URL must not carry credentials; set the user and password file instead")
        }
        try MailMessage.checkAddress(from, field: "sender")
        self.url = url
        self.from = from
        self.username = username
        self.password = password
        self.timeout = timeout
        self.caFile = caFile
    }

    /// How a connection to the server is encrypted.
    public enum Encryption: Sendable, Hashable {
        /// TLS from the first byte (smtps://).
        case implicit
        /// STARTTLS, or no mail: a server that does not offer it, or whose certificate is not trusted, gets nothing.
        case startTLSRequired
        /// STARTTLS when the server offers it (a server on this machine); a certificate offered must still verify.
        case startTLSWhenOffered
    }

    /// smtps:// is TLS from the start; smtp:// requires STARTTLS except to a server on this machine.
    public var encryption: Encryption {
        if url.lowercased().hasPrefix("smtps:") { return .implicit }
        return isLoopback ? .startTLSWhenOffered : .startTLSRequired
    }

    /// Whether the server is on this machine (plain SMTP is then allowed).
    public var isLoopback: Bool {
        let host = URLComponents(string: url)?.host?.lowercased() ?? ""
        return host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
    }
}

/// Sends mail over SMTP with libcurl: one connection per mail, on a thread of its own (curl's easy interface
/// blocks), so a slow server never holds up Swift's cooperative pool.
public final class SMTPSender: Sendable {
    public let settings: SMTPSettings

    /// Creates a sender.
    public init(settings: SMTPSettings) {
        Self.initializeLibrary
        self.settings = settings
    }

    /// curl_global_init is not thread-safe; a static let runs it exactly once in this module.
    private static let initializeLibrary: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Sends `message` (its `from` is replaced by the settings' sender); throws when the server did not accept it.
    public func send(_ message: MailMessage) async throws(MailError) {
        var message = message
        message.from = settings.from
        let bytes = try message.rendered()
        let settings = settings
        let recipient = message.to
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<MailError?, Never>) in
            let thread = Thread { continuation.resume(returning: Self.perform(settings, to: recipient, bytes)) }
            thread.name = "rave-smtp"
            thread.start()
        }
        if let result { throw result }
    }

    /// One SMTP exchange with curl's easy interface; nil on success.
    private static func perform(_ settings: SMTPSettings, to recipient: String, _ bytes: [UInt8]) -> MailError? {
        guard let easy = curl_easy_init() else { return MailError("curl_easy_init failed") }
        defer { curl_easy_cleanup(easy) }
        let upload = Upload(bytes)
        let recipients: UnsafeMutablePointer<curl_slist>? = curl_slist_append(nil, "<\(recipient)>")
        defer { curl_slist_free_all(recipients) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let useTLS =
            switch settings.encryption {
            case .implicit, .startTLSRequired: Int(CURLUSESSL_ALL.rawValue)
            case .startTLSWhenOffered: Int(CURLUSESSL_TRY.rawValue)
            }
        let code = errorBuffer.withUnsafeMutableBufferPointer { errors in
            withExtendedLifetime(upload) { () -> CURLcode in
                _ = rave_curl_easy_set_string(easy, CURLOPT_URL, settings.url)
                _ = rave_curl_easy_set_string(easy, CURLOPT_MAIL_FROM, "<\(settings.from)>")
                _ = rave_curl_easy_set_list(easy, CURLOPT_MAIL_RCPT, recipients)
                _ = rave_curl_easy_set_long(easy, CURLOPT_USE_SSL, useTLS)
                _ = rave_curl_easy_set_long(easy, CURLOPT_UPLOAD, 1)
                _ = rave_curl_easy_set_long(easy, CURLOPT_NOSIGNAL, 1)
                _ = rave_curl_easy_set_long(easy, CURLOPT_TIMEOUT_MS, Int(settings.timeout / .milliseconds(1)))
                _ = rave_curl_easy_set_long(
                    easy, CURLOPT_CONNECTTIMEOUT_MS, Int(min(settings.timeout, .seconds(10)) / .milliseconds(1)))
                _ = rave_curl_easy_set_pointer(easy, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errors.baseAddress))
                if let username = settings.username, let password = settings.password {
                    _ = rave_curl_easy_set_string(easy, CURLOPT_USERNAME, username)
                    _ = rave_curl_easy_set_string(easy, CURLOPT_PASSWORD, password)
                }
                if let caFile = settings.caFile { _ = rave_curl_easy_set_string(easy, CURLOPT_CAINFO, caFile) }
                _ = rave_curl_easy_set_callback(easy, CURLOPT_READFUNCTION) { buffer, size, count, context in
                    guard let buffer, let context else { return 0 }
                    let upload = Unmanaged<Upload>.fromOpaque(context).takeUnretainedValue()
                    return upload.read(into: buffer, capacity: size * count)
                }
                _ = rave_curl_easy_set_pointer(easy, CURLOPT_READDATA, Unmanaged.passUnretained(upload).toOpaque())
                return curl_easy_perform(easy)
            }
        }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            return MailError("SMTP delivery to \(settings.url) failed: \(reason)")
        }
        return nil
    }
}

/// The message curl reads while uploading; used only on the sending thread.
private final class Upload {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    func read(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        let count = min(capacity, bytes.count - offset)
        bytes.withUnsafeBufferPointer { source in
            guard let base = source.baseAddress else { return }
            UnsafeMutableRawPointer(buffer).copyMemory(from: base + offset, byteCount: count)
        }
        offset += count
        return count
    }
}
