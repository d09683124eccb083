import Foundation

/// Why a mail was not built or not sent, in words fit for a log line.
public struct MailError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// A plain-text mail to one recipient, rendered as an RFC 5322 message (MIME, UTF-8).
///
/// Header values (addresses, the sender's name, the subject) may not hold CR or LF: a value with a line break
/// could add headers of its own, so rendering refuses it rather than cleaning it.
public struct MailMessage: Sendable, Hashable {
    /// The envelope and `From:` address.
    public var from: String
    /// Shown before the `From:` address (encoded when not ASCII); empty for none.
    public var fromName: String
    public var to: String
    public var subject: String
    /// Plain text; line breaks become CRLF.
    public var body: String

    /// Creates a message.
    public init(from: String, fromName: String = "", to: String, subject: String, body: String) {
        self.from = from
        self.fromName = fromName
        self.to = to
        self.subject = subject
        self.body = body
    }

    /// The message as sent: headers, a blank line, the body in base64 (lines of 76), all with CRLF line ends.
    public func rendered(date: Date = Date(), messageID: String? = nil) throws(MailError) -> [UInt8] {
        try Self.checkAddress(from, field: "from")
        try Self.checkAddress(to, field: "to")
        try Self.checkHeaderValue(fromName, field: "from name")
        try Self.checkHeaderValue(subject, field: "subject")
        let domain = from.split(separator: "@").last.map(String.init) ?? "localhost"
        let identifier = messageID ?? "\(UUID().uuidString.lowercased())@\(domain)"
        try Self.checkHeaderValue(identifier, field: "message id")
        let sender = fromName.isEmpty ? "<\(from)>" : "\(Self.phrase(fromName)) <\(from)>"
        var lines = [
            "Date: \(Self.dateTime(date))",
            "From: \(sender)",
            "To: <\(to)>",
            "Message-ID: <\(identifier)>",
            "Subject: \(Self.encodedWords(subject))",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=UTF-8",
            "Content-Transfer-Encoding: base64",
            "",
        ]
        let text = body.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .replacingOccurrences(of: "\n", with: "\r\n")
        let encoded = Data(text.utf8).base64EncodedString()
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let end = encoded.index(index, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(String(encoded[index..<end]))
            index = end
        }
        return Array((lines.joined(separator: "\r\n") + "\r\n").utf8)
    }

    /// An address as SMTP and the headers carry it: `local@domain`, printable ASCII without spaces, brackets or
    /// line breaks.
    public static func checkAddress(_ address: String, field: String) throws(MailError) {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, address.utf8.count <= 254,
            address.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "<") && $0 != UInt8(ascii: ">") })
        else {
            throw MailError("the \(field) address \"\(address.debugDescription.dropFirst().dropLast())\" is not valid")
        }
    }

    /// Refuses a header value holding CR or LF (or another control character).
    public static func checkHeaderValue(_ value: String, field: String) throws(MailError) {
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw MailError("the mail's \(field) holds a line break or control character")
        }
    }

    /// A display name: as it is when plain ASCII letters, digits and spaces, else encoded words.
    static func phrase(_ name: String) -> String {
        let plain = name.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x20
        }
        return plain ? name : encodedWords(name, always: true)
    }

    /// RFC 2047 encoded words (`=?UTF-8?B?…?=`, each at most 75 characters, folded onto continuation lines) when
    /// `text` is not printable ASCII, else `text` itself.
    static func encodedWords(_ text: String, always: Bool = false) -> String {
        if !always, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }), text.utf8.count <= 900 { return text }
        // 40 bytes of UTF-8 make 56 base64 characters, 68 with the markers, so even the first line ("Subject: " and a
        // word) stays within 78 characters; characters are never split.
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            if chunk.count + bytes.count > 40, !chunk.isEmpty {
                words.append("=?UTF-8?B?\(Data(chunk).base64EncodedString())?=")
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty || words.isEmpty { words.append("=?UTF-8?B?\(Data(chunk).base64EncodedString())?=") }
        return words.joined(separator: "\r\n ")
    }

    /// RFC 5322's date-time in UTC: "Tue, 01 Dec 2026 22:22:57 +0000".
    static func dateTime(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let parts = calendar.dateComponents([.weekday, .day, .month, .year, .hour, .minute, .second], from: date)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(days[((parts.weekday ?? 1) - 1) % 7]), \(two(parts.day)) \(months[((parts.month ?? 1) - 1) % 12]) "
            + "\(parts.year ?? 1970) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) +0000"
    }
}
