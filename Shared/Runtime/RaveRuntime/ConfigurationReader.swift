/// Reads typed settings from an environment and remembers each one for the start-up log line.
///
/// Every accessor either returns a valid value or throws a `RuntimeError` naming the variable and what it
/// allows, so a bad deployment stops at start-up instead of misbehaving later. Services use it for their own
/// `RAVE_…` variables too, so their settings appear in the same effective-configuration line.
public struct ConfigurationReader: Sendable {
    /// The variables read from (the process environment, or a dictionary in tests).
    public let environment: [String: String]
    /// Every setting read so far, in order, with secrets already masked.
    public private(set) var effectiveSettings: [(String, String)] = []

    public init(environment: [String: String]) {
        self.environment = environment
    }

    /// A non-empty string; `secret` masks it in `effectiveSettings`.
    public mutating func string(
        _ variable: String, default fallback: String, secret: Bool = false
    ) throws(RuntimeError)
        -> String
    {
        let value = environment[variable] ?? fallback
        guard !value.isEmpty else { throw .invalidValue(variable, value, allowed: "a non-empty value") }
        record(variable, secret ? Self.masked(value) : value)
        return value
    }

    /// An integer within `range`.
    public mutating func integer(
        _ variable: String, default fallback: Int, range: ClosedRange<Int>
    ) throws(RuntimeError)
        -> Int
    {
        guard let text = environment[variable] else {
            record(variable, String(fallback))
            return fallback
        }
        guard let value = Self.parseInteger(text), range.contains(value) else {
            throw .invalidValue(variable, text, allowed: "an integer in \(range.lowerBound)…\(range.upperBound)")
        }
        record(variable, String(value))
        return value
    }

    /// A size in bytes, written as a plain number or with a `KiB`/`MiB`/`GiB` suffix, within `range`.
    public mutating func byteSize(
        _ variable: String, default fallback: Int, range: ClosedRange<Int>
    )
        throws(RuntimeError) -> Int
    {
        guard let text = environment[variable] else {
            record(variable, String(fallback))
            return fallback
        }
        let units: [(String, Int)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("", 1)]
        for (suffix, multiplier) in units where text.hasSuffix(suffix) {
            let digits = String(text.dropLast(suffix.count)).trimmingSpaces()
            if let number = Self.parseInteger(digits),
                number.multipliedReportingOverflow(by: multiplier).overflow
                    == false, range.contains(number * multiplier)
            {
                record(variable, String(number * multiplier))
                return number * multiplier
            }
            break
        }
        throw .invalidValue(
            variable, text, allowed: "a byte count in \(range.lowerBound)…\(range.upperBound) (suffixes KiB, MiB, GiB)")
    }

    /// A duration written in seconds (`30`, `0.5`) or with a unit (`250ms`, `30s`, `5m`), within `range`.
    public mutating func duration(
        _ variable: String, default fallback: Duration, range: ClosedRange<Duration>
    )
        throws(RuntimeError) -> Duration
    {
        guard let text = environment[variable] else {
            record(variable, Self.formatted(fallback))
            return fallback
        }
        guard let value = Self.parseDuration(text), range.contains(value) else {
            throw .invalidValue(
                variable, text,
                allowed:
                    "a duration in \(Self.formatted(range.lowerBound))…\(Self.formatted(range.upperBound)) (units ms, s, m)"
            )
        }
        record(variable, Self.formatted(value))
        return value
    }

    /// A boolean: true/false, yes/no, on/off, 1/0.
    public mutating func boolean(_ variable: String, default fallback: Bool) throws(RuntimeError) -> Bool {
        guard let text = environment[variable] else {
            record(variable, String(fallback))
            return fallback
        }
        switch text.lowercased() {
        case "true", "yes", "on", "1": record(variable, "true"); return true
        case "false", "no", "off", "0": record(variable, "false"); return false
        default: throw .invalidValue(variable, text, allowed: "true or false")
        }
    }

    /// A `host:port` address (`[::1]:port` for IPv6); port 0 picks a free port.
    public mutating func address(
        _ variable: String, default fallback: SocketAddress
    ) throws(RuntimeError)
        -> SocketAddress
    {
        guard let text = environment[variable] else {
            record(variable, fallback.description)
            return fallback
        }
        guard let address = SocketAddress(parsing: text) else {
            throw .invalidValue(variable, text, allowed: "host:port with a port in 0…65535, like 127.0.0.1:7501")
        }
        record(variable, address.description)
        return address
    }

    /// One of `choices`.
    public mutating func choice(
        _ variable: String, default fallback: String, choices: [String]
    ) throws(RuntimeError)
        -> String
    {
        let value = environment[variable] ?? fallback
        guard choices.contains(value) else {
            throw .invalidValue(variable, value, allowed: "one of " + choices.joined(separator: ", "))
        }
        record(variable, value)
        return value
    }

    /// Adds a setting to the effective configuration without reading it (derived values).
    public mutating func record(_ variable: String, _ shownValue: String) {
        effectiveSettings.removeAll { $0.0 == variable }
        effectiveSettings.append((variable, shownValue))
    }

    // MARK: - Parsing and masking

    static func parseInteger(_ text: String) -> Int? {
        Int(text.replacing("_", with: ""))
    }

    static func parseDuration(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ms", 1e-3), ("s", 1), ("m", 60), ("", 1)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            guard let number = Double(text.dropLast(suffix.count)), number.isFinite, number >= 0 else { return nil }
            return .nanoseconds(Int64((number * scale * 1e9).rounded()))
        }
        return nil
    }

    /// A duration as it would be written in the environment: `30s`, `250ms`.
    static func formatted(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return "\(seconds)s" }
        let milliseconds = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return milliseconds == milliseconds.rounded() ? "\(Int64(milliseconds))ms" : "\(milliseconds)ms"
    }

    /// A secret shown only as its length class, so logs never leak it but an empty value is still visible.
    public static func masked(_ secret: String) -> String {
        secret.isEmpty ? "" : "****"
    }

    /// A PostgreSQL connection string with its password masked (URL or `key=value` form).
    public static func maskedConnectionString(_ connection: String) -> String {
        if let schemeEnd = connection.firstRange(of: "://") {
            var text = connection
            let rest = text[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"),
                let colon = rest[..<at].firstIndex(of: ":")
            {
                text.replaceSubrange(text.index(after: colon)..<at, with: "****")
            }
            return maskedParameters(text, separator: "&", after: "?")
        }
        return maskedParameters(connection, separator: " ", after: nil)
    }

    /// Masks `password=…` in a query string (`&`-separated, after `?`) or a libpq keyword list.
    private static func maskedParameters(_ text: String, separator: Character, after marker: Character?) -> String {
        var head = ""
        var tail = Substring(text)
        if let marker {
            guard let index = text.firstIndex(of: marker) else { return text }
            head = String(text[...index])
            tail = text[text.index(after: index)...]
        }
        let parts = tail.split(separator: separator, omittingEmptySubsequences: false).map { part -> String in
            let keyValue = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard keyValue.count == 2, keyValue[0].lowercased().contains("password") else { return String(part) }
            return "\(keyValue[0])=****"
        }
        return head + parts.joined(separator: String(separator))
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}

/// A host and port to listen on or connect to.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port` or `[ipv6]:port`.
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains(" "), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        self.init(host: host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
