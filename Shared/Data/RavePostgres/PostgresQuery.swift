/// A statement with its parameters, ready to send (`$1`, `$2`, … in the SQL).
///
/// Built from a `PostgresStatement`, it runs as that named prepared statement (prepared on the connection the
/// first time, then Bind/Execute only), also inside `pipeline(_:)`; built from SQL text, it is parsed and
/// planned on every run.
public struct PostgresQuery: Sendable {
    public var sql: String
    public var parameters: [PostgresValue?]
    /// The prepared statement's name when the query was built from a `PostgresStatement`, else nil.
    public var statementName: String?

    public init(_ sql: String, _ parameters: [(any PostgresEncodable)?] = []) {
        self.sql = sql
        self.parameters = parameters.map { $0?.postgresValue ?? nil }
    }

    public init(sql: String, values: [PostgresValue?]) {
        self.sql = sql
        self.parameters = values
    }

    /// Runs `statement` with `parameters`, as a named prepared statement.
    public init(_ statement: PostgresStatement, _ parameters: [(any PostgresEncodable)?] = []) {
        self.init(statement.sql, parameters)
        statementName = statement.name
    }

    /// The named statement this query runs as, or nil for plain SQL.
    var statement: PostgresStatement? {
        statementName.map { PostgresStatement(name: $0, sql: sql) }
    }
}

/// A named prepared statement: prepared on a connection the first time it runs there, then reused.
///
/// Declare these as constants next to the store code that uses them; the name must be unique per SQL text.
public struct PostgresStatement: Sendable, Hashable {
    public let name: String
    public let sql: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
    }
}

/// Things every client (a connection, a transaction, the pool) can run.
public protocol PostgresQueryable: Sendable {
    /// Runs one statement with binary-format parameters and results.
    @discardableResult
    func query(_ query: PostgresQuery) async throws -> PostgresRows
    /// Runs a named prepared statement, preparing it on first use.
    func execute(_ statement: PostgresStatement, _ parameters: [(any PostgresEncodable)?]) async throws -> PostgresRows
}

extension PostgresQueryable {
    /// Runs `sql` with `parameters` for `$1`, `$2`, …; NULL is `nil`.
    @discardableResult
    public func query(_ sql: String, _ parameters: [(any PostgresEncodable)?] = []) async throws -> PostgresRows {
        try await query(PostgresQuery(sql, parameters))
    }
}

/// Encodes rows in COPY's text format: tab-separated, `\N` for NULL, backslash escapes.
enum CopyTextEncoder {
    static func encode(_ rows: some Sequence<[(any PostgresEncodable)?]>, chunkSize: Int = 256 * 1024) -> [[UInt8]] {
        var chunks: [[UInt8]] = []
        var current: [UInt8] = []
        current.reserveCapacity(chunkSize + 1024)
        for row in rows {
            for (index, value) in row.enumerated() {
                if index > 0 { current.append(UInt8(ascii: "\t")) }
                appendText(value, to: &current)
            }
            current.append(UInt8(ascii: "\n"))
            if current.count >= chunkSize {
                chunks.append(current)
                current.removeAll(keepingCapacity: true)
            }
        }
        if !current.isEmpty { chunks.append(current) }
        return chunks
    }

    private static func appendText(_ value: (any PostgresEncodable)?, to output: inout [UInt8]) {
        // Concrete casts first: the common column types are written straight into the buffer, without building
        // a PostgresValue or a String per cell.
        switch value {
        case let text as String: appendEscaped(text.utf8, to: &output)
        case let number as Int: appendDecimal(Int64(number), to: &output)
        case let number as Int64: appendDecimal(number, to: &output)
        case let number as Int32: appendDecimal(Int64(number), to: &output)
        case let id as RaveID: appendUUID(id, to: &output)
        case let time as PostgresTimestamp: appendTimestamp(time, to: &output)
        case let flag as Bool: output.append(flag ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case let json as PostgresJSON: appendEscaped(json.text.utf8, to: &output)
        case let number as Double: output.append(contentsOf: "\(number)".utf8)
        default:
            // NULL, including a nil Optional (which none of the casts above match), or a type sent as bytea.
            guard let encoded = value?.postgresValue else {
                output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
                return
            }
            appendBytea(encoded, to: &output)
        }
    }

    static func appendDecimal(_ value: Int64, to output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            output.append(contentsOf: buffer[index...])
        }
    }

    static func appendPadded(_ value: Int64, width: Int, to output: inout [UInt8]) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            output.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
            rest %= divisor
            divisor /= 10
        }
    }

    private static func appendUUID(_ id: RaveID, to output: inout [UInt8]) {
        let hex: StaticString = "0123456789abcdef"
        hex.withUTF8Buffer { digits in
            for position in 0..<32 {
                if position == 8 || position == 12 || position == 16 || position == 20 {
                    output.append(UInt8(ascii: "-"))
                }
                let word = position < 16 ? id.high : id.low
                output.append(digits[Int(word >> UInt64(60 - 4 * (position % 16)) & 0xf)])
            }
        }
    }

    private static func appendEscaped(_ bytes: some Sequence<UInt8>, to output: inout [UInt8]) {
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\t"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case UInt8(ascii: "\n"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            default: output.append(byte)
            }
        }
    }

    /// An ISO date with microseconds and an explicit UTC offset: unambiguous whatever the session's DateStyle.
    private static func appendTimestamp(_ time: PostgresTimestamp, to output: inout [UInt8]) {
        let micros = time.microsecondsSinceEpoch
        let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
        ISODate.append(secondsSinceEpoch: seconds, to: &output)
        output.append(UInt8(ascii: "."))
        appendPadded(micros - seconds * 1_000_000, width: 6, to: &output)
        output.append(contentsOf: [UInt8(ascii: "+"), UInt8(ascii: "0"), UInt8(ascii: "0")])
    }

    private static func appendBytea(_ value: PostgresValue, to output: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        // In COPY text format the bytea's own backslash must itself be escaped.
        output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "x")])
        for byte in value.bytes {
            output.append(hex[Int(byte >> 4)])
            output.append(hex[Int(byte & 0xf)])
        }
    }
}

/// Civil-date formatting for UTC instants, without Foundation's formatters on the bulk-load path (and the export
/// records' RFC 3339 times).
public enum ISODate {
    /// The proleptic Gregorian date of a day counted from 1970-01-01 (negative before), by Howard Hinnant's
    /// days-to-civil algorithm.
    public static func civil(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Appends "YYYY-MM-DD HH:MM:SS" for seconds since 1970-01-01T00:00:00Z.
    static func append(secondsSinceEpoch: Int64, to output: inout [UInt8]) {
        let days = secondsSinceEpoch >= 0 ? secondsSinceEpoch / 86_400 : (secondsSinceEpoch - 86_399) / 86_400
        let secondOfDay = secondsSinceEpoch - days * 86_400
        let (year, month, day) = civil(daysSinceEpoch: days)
        let pad = CopyTextEncoder.appendPadded
        pad(year, 4, &output)
        output.append(UInt8(ascii: "-"))
        pad(month, 2, &output)
        output.append(UInt8(ascii: "-"))
        pad(day, 2, &output)
        output.append(UInt8(ascii: " "))
        pad(secondOfDay / 3600, 2, &output)
        output.append(UInt8(ascii: ":"))
        pad(secondOfDay / 60 % 60, 2, &output)
        output.append(UInt8(ascii: ":"))
        pad(secondOfDay % 60, 2, &output)
    }
}
