import Glibc
import Synchronization

/// A structured logger: a value passed down the call chain, carrying metadata for every line it writes.
///
/// Lines are logfmt (`ts=… level=info msg="…" request_id=…`), one per event, written to standard error
/// by the process-wide `LogSink`. Message arguments are autoclosures: a disabled level costs a comparison.
public struct Logger: Sendable {
    public enum Level: Int, Comparable, Sendable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        public var name: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }

        /// Parses a level name as used in `RAVE_LOG_LEVEL`.
        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
            self = level
        }
    }

    /// The component writing (`identity`, `rpc.server`, `postgres.pool`).
    public var label: String
    /// Lines below this level are dropped.
    public var level: Level
    /// Key/value pairs added to every line.
    public var metadata: [(key: String, value: String)]
    private let sink: LogSink

    public init(label: String, level: Level = .info, sink: LogSink = .standardError) {
        self.label = label
        self.level = level
        self.metadata = []
        self.sink = sink
    }

    /// A copy that adds `value` under `key` to every line.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata.append((key, value))
        return copy
    }

    public subscript(metadataKey key: String) -> String? {
        get { metadata.last(where: { $0.key == key })?.value }
        set {
            metadata.removeAll { $0.key == key }
            if let newValue { metadata.append((key, newValue)) }
        }
    }

    public func log(
        _ level: Level, _ message: @autoclosure () -> String, _ fields: @autoclosure () -> [(String, String)] = []
    ) {
        guard level >= self.level else { return }
        sink.write(format(level: level, message: message(), fields: fields()))
    }

    public func trace(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [(String, String)] = []) {
        log(.trace, message(), fields())
    }

    public func debug(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [(String, String)] = []) {
        log(.debug, message(), fields())
    }

    public func info(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [(String, String)] = []) {
        log(.info, message(), fields())
    }

    public func notice(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [(String, String)] = []) {
        log(.notice, message(), fields())
    }

    public func warning(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [(String, String)] = []) {
        log(.warning, message(), fields())
    }

    public func error(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [(String, String)] = []) {
        log(.error, message(), fields())
    }

    public func critical(
        _ message: @autoclosure () -> String, _ fields: @autoclosure () -> [(String, String)] = []
    ) {
        log(.critical, message(), fields())
    }

    private func format(level: Level, message: String, fields: [(String, String)]) -> String {
        var line = "ts=\(Timestamp.now()) level=\(level.name) logger=\(label) msg=\(Self.quoted(message))"
        for (key, value) in metadata { line += " \(key)=\(Self.quoted(value))" }
        for (key, value) in fields { line += " \(key)=\(Self.quoted(value))" }
        line += "\n"
        return line
    }

    /// logfmt value quoting: bare when safe, otherwise double-quoted with escapes.
    static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.utf8.contains { $0 <= 0x20 || $0 == 0x22 || $0 == 0x3D || $0 == 0x5C }
        guard needsQuotes else { return value }
        var escaped = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            default:
                if scalar.value < 0x20 {
                    escaped += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    escaped.unicodeScalars.append(scalar)
                }
            }
        }
        return escaped + "\""
    }
}

/// Where log lines go.
///
/// Writes are whole lines, serialized, so lines from threads never interleave.
public final class LogSink: Sendable {
    private let fd: Int32
    private let lock = Mutex<Void>(())
    /// Lines kept in memory instead of written (tests), when `fd` is -1.
    private let captured = Mutex<[String]>([])

    public static let standardError = LogSink(fd: 2)

    public init(fd: Int32) {
        self.fd = fd
    }

    /// A sink that keeps lines in memory, for tests that assert on logging.
    public static func capturing() -> LogSink { LogSink(fd: -1) }

    /// Lines captured so far (empty for a sink that writes to a descriptor).
    public var capturedLines: [String] { captured.withLock { $0 } }

    func write(_ line: String) {
        if fd < 0 {
            captured.withLock { $0.append(line) }
            return
        }
        lock.withLock { _ in
            let bytes = Array(line.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}

/// UTC timestamps in RFC 3339 with milliseconds.
public enum Timestamp {
    public static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = spec.tv_nsec / 1_000_000
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T"
            + "\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)).\(pad(Int32(millis), width: 3))Z"
    }

    private static func pad(_ value: Int32, width: Int = 2) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
