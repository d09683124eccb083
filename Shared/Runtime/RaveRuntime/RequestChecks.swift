import RavePostgres
import RaveRPC

/// Checks of client input that every service applies alike.
///
/// Rave IDs, numeric ranges from the protocol's comments, and display text. Each refuses with INVALID_ARGUMENT
/// and a message that says what is allowed.
public enum RequestChecks {
    /// An id in a request: exactly 32 lowercase hex digits (`RaveID(wire:)`).
    ///
    /// The one spelling every service accepts; other spellings are refused rather than normalised.
    public static func raveID(_ text: String, field: @autoclosure () -> String) throws(RPCError) -> RaveID {
        guard let id = RaveID(wire: text) else { throw .invalidArgument(raveIDProblem(field: field(), text: text)) }
        return id
    }

    /// A list of ids, at most `maximum` long, each checked as `raveID`.
    public static func raveIDs(_ texts: [String], field: String, maximum: Int) throws(RPCError) -> [RaveID] {
        guard texts.count <= maximum else {
            throw .invalidArgument("\(field) may hold at most \(maximum) ids, got \(texts.count)")
        }
        var ids: [RaveID] = []
        ids.reserveCapacity(texts.count)
        for (index, text) in texts.enumerated() {
            ids.append(try raveID(text, field: "\(field)[\(index)]"))
        }
        return ids
    }

    /// The message for an id `RaveID(wire:)` refused, for services that throw their own error type.
    public static func raveIDProblem(field: String, text: String) -> String {
        "\(field) must be 32 lowercase hex digits, got \(quoted(text))"
    }

    /// `value` quoted for an error message: control characters escaped, cut after 40 characters, so neither a
    /// megabyte nor a terminal escape sequence is echoed back.
    public static func quoted(_ value: String) -> String {
        var shown = ""
        for (index, scalar) in value.unicodeScalars.enumerated() {
            guard index < 40 else {
                shown += "…"
                break
            }
            shown += TextRule.isControl(scalar) ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
        }
        return "\"\(shown)\""
    }
}

/// The values a numeric request field accepts, as the proto comment documents them ("1…100; 0 means 25").
///
/// Each service declares its fields' ranges in one place (its `RequestLimits`), and its tests compare them with
/// the proto comments, so the documentation and the check cannot drift apart.
public struct RequestRange: Sendable, Hashable {
    /// The field's name in the proto ("page_size").
    public let field: String
    public let allowed: ClosedRange<Int64>
    /// The value an unset field (0) stands for, when 0 is not itself in `allowed`; nil: 0 is refused.
    public let zeroMeans: Int64?

    public init(_ field: String, _ allowed: ClosedRange<Int64>, zeroMeans: Int64? = nil) {
        self.field = field
        self.allowed = allowed
        self.zeroMeans = zeroMeans
    }

    /// The value to use for `raw`, or INVALID_ARGUMENT ("limit must be 1…50, got 0").
    public func check(_ raw: some BinaryInteger) throws(RPCError) -> Int {
        try check(raw, orThrow: RPCError.invalidArgument)
    }

    /// The value to use for `raw`, or the error `invalidArgument` makes of the message, for services that throw
    /// their own error type.
    public func check<Failure: Error>(
        _ raw: some BinaryInteger, orThrow invalidArgument: (String) -> Failure
    ) throws(Failure) -> Int {
        if raw == 0, let zeroMeans { return Int(zeroMeans) }
        guard let value = Int64(exactly: raw), allowed.contains(value) else {
            throw invalidArgument("\(field) must be \(description), got \(raw)")
        }
        return Int(value)
    }

    /// "1…100 (0 means 25)".
    public var description: String {
        "\(allowed.lowerBound)…\(allowed.upperBound)" + (zeroMeans.map { " (0 means \($0))" } ?? "")
    }
}

/// What a piece of display text (a player's display name, a contact's name) may be: a number of characters
/// as people count them (grapheme clusters), a number of UTF-8 bytes, and no control characters.
///
/// Both counts matter: "e" followed by 200 combining marks is one character but 401 bytes, so a limit in
/// characters alone lets a name grow without bound.
public struct TextRule: Sendable, Hashable {
    public let characters: ClosedRange<Int>
    public let maximumBytes: Int

    public init(characters: ClosedRange<Int>, maximumBytes: Int) {
        self.characters = characters
        self.maximumBytes = maximumBytes
    }

    /// Player display names: 1…64 characters, at most 256 bytes.
    public static let displayName = TextRule(characters: 1...64, maximumBytes: 256)

    /// `value` when it follows the rule, else INVALID_ARGUMENT naming `field` and what was wrong.
    @discardableResult
    public func check(_ value: String, field: String) throws(RPCError) -> String {
        let count = value.count
        guard characters.contains(count) else {
            throw .invalidArgument(
                "\(field) must be \(characters.lowerBound)…\(characters.upperBound) characters, got \(count)")
        }
        let bytes = value.utf8.count
        guard bytes <= maximumBytes else {
            throw .invalidArgument(
                "\(field) must be at most \(maximumBytes) bytes of UTF-8, got \(bytes) (in \(count) characters)")
        }
        if let control = value.unicodeScalars.first(where: Self.isControl) {
            throw .invalidArgument(
                "\(field) may not hold control characters (line breaks, tabs, escapes, direction overrides), "
                    + "got U+\(String(control.value, radix: 16, uppercase: true)) in \(RequestChecks.quoted(value))")
        }
        return value
    }

    /// `value` made to follow the rule, for text from elsewhere (an identity provider's name claim).
    ///
    /// Control characters become spaces, surrounding white space goes, and characters are dropped from the end
    /// until both limits hold. Nil when nothing is left.
    public func fitting(_ value: String) -> String? {
        var scalars = String.UnicodeScalarView()
        for scalar in value.unicodeScalars { scalars.append(Self.isControl(scalar) ? " " : scalar) }
        var text = Substring(String(scalars).trimmingWhiteSpace())
        if text.count > characters.upperBound { text = text.prefix(characters.upperBound) }
        while text.utf8.count > maximumBytes { text = text.dropLast() }
        let fitted = String(text).trimmingWhiteSpace()
        return characters.contains(fitted.count) && !fitted.isEmpty ? fitted : nil
    }

    /// C0 and C1 controls (newline, tab, ESC, DEL, …), line and paragraph separators, and the bidirectional
    /// embedding, override and isolate controls that make text display in another order than it reads.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}

extension String {
    /// The string without white space (spaces, line breaks) at either end.
    fileprivate func trimmingWhiteSpace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(self[first...last])
    }
}
