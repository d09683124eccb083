import Foundation
import RaveJSON
import RavePostgres

/// One export record: a JSON object written field by field in the conventions every service's export shares (each
/// docs/<service>.md, "Exporting an account"): snake_case keys, ids as 32 lowercase hex digits, times as RFC 3339
/// UTC with milliseconds, 64-bit integers as decimal strings, small integers as numbers, bytes as base64, enums as
/// lowercase strings, NULL as `null`.
public struct ExportRecord: Sendable {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]

    public init() {}

    /// The object's UTF-8 JSON.
    public var json: [UInt8] { bytes + [UInt8(ascii: "}")] }

    public mutating func id(_ key: String, _ value: RaveID?) {
        field(key, value.map { JSONString.quotedBytes($0.hex) })
    }

    public mutating func string(_ key: String, _ value: String?) {
        field(key, value.map { JSONString.quotedBytes($0) })
    }

    /// An enum's value, as its lowercase name.
    public mutating func enumeration(_ key: String, _ value: String) {
        field(key, JSONString.quotedBytes(value))
    }

    public mutating func time(_ key: String, _ value: PostgresTimestamp?) {
        field(key, value.map { JSONString.quotedBytes(Self.rfc3339($0)) })
    }

    /// A 64-bit integer (money, counts that may exceed 2⁵³), as a decimal string.
    public mutating func int64(_ key: String, _ value: Int64?) {
        field(key, value.map { JSONString.quotedBytes(String($0)) })
    }

    /// A small integer (a nonce, a count of lines), as a number.
    public mutating func int(_ key: String, _ value: Int?) {
        field(key, value.map { Array(String($0).utf8) })
    }

    public mutating func bool(_ key: String, _ value: Bool?) {
        field(key, value.map { Array(($0 ? "true" : "false").utf8) })
    }

    /// Bytes, as standard base64 with padding.
    public mutating func bytes(_ key: String, _ value: [UInt8]?) {
        field(key, value.map { JSONString.quotedBytes(Data($0).base64EncodedString()) })
    }

    /// A list of strings.
    public mutating func strings(_ key: String, _ values: [String]) {
        var list: [UInt8] = [UInt8(ascii: "[")]
        for (index, value) in values.enumerated() {
            if index > 0 { list.append(UInt8(ascii: ",")) }
            JSONString.append(value, to: &list)
        }
        field(key, list + [UInt8(ascii: "]")])
    }

    /// Pairs of strings, as a JSON object (a later pair of a repeated key is kept too: readers take the last).
    public mutating func stringMap(_ key: String, _ pairs: [(key: String, value: String)]) {
        var object: [UInt8] = [UInt8(ascii: "{")]
        for (index, pair) in pairs.enumerated() {
            if index > 0 { object.append(UInt8(ascii: ",")) }
            JSONString.append(pair.key, to: &object)
            object.append(UInt8(ascii: ":"))
            JSONString.append(pair.value, to: &object)
        }
        field(key, object + [UInt8(ascii: "}")])
    }

    private mutating func field(_ key: String, _ value: [UInt8]?) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        JSONString.append(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        bytes += value ?? Array("null".utf8)
    }

    /// "2026-12-02T03:45:00.123Z": UTC, milliseconds (rounded down); PostgreSQL's infinities as "infinity" and
    /// "-infinity".
    static func rfc3339(_ time: PostgresTimestamp) -> String {
        switch time.microsecondsSinceEpoch {
        case .max: return "infinity"
        case .min: return "-infinity"
        default: break
        }
        let micros = time.microsecondsSinceEpoch
        let milliseconds = micros >= 0 ? micros / 1000 : (micros - 999) / 1000
        let (days, dayMilliseconds) = Self.floorDivide(milliseconds, 86_400_000)
        let (year, month, day) = ISODate.civil(daysSinceEpoch: days)
        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(value.magnitude)
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2) + "T"
            + padded(dayMilliseconds / 3_600_000, 2) + ":" + padded(dayMilliseconds / 60000 % 60, 2) + ":"
            + padded(dayMilliseconds / 1000 % 60, 2) + "." + padded(dayMilliseconds % 1000, 3) + "Z"
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / divisor : (value - divisor + 1) / divisor
        return (quotient, value - quotient * divisor)
    }
}
