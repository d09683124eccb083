import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// Checks of client input, each failing with INVALID_ARGUMENT and a message that says what is allowed.
enum Validation {
    /// A Rave ID (user, app, publisher, session, merge): 32 lowercase hex digits.
    static func raveID(_ text: String, field: @autoclosure () -> String) throws(RPCError) -> RaveID {
        guard let id = lowercaseHexID(text) else {
            throw .invalidArgument("\(field()) must be 32 lowercase hex digits, got \(quoted(text))")
        }
        return id
    }

    /// Parses exactly 32 lowercase hex digits in one pass over the UTF-8 bytes: ResolveUsers and friends parse up
    /// to a thousand ids per call, and the generic `RaveID(_:)` (any `StringProtocol`, dashes allowed) is
    /// several times slower.
    private static func lowercaseHexID(_ text: String) -> RaveID? {
        var text = text
        return text.withUTF8 { bytes -> RaveID? in
            guard bytes.count == 32 else { return nil }
            var high: UInt64 = 0
            var low: UInt64 = 0
            for index in 0..<32 {
                let byte = bytes[index]
                let digit: UInt64
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte &- UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte &- UInt8(ascii: "a") &+ 10)
                default: return nil
                }
                if index < 16 { high = high << 4 | digit } else { low = low << 4 | digit }
            }
            return RaveID(high: high, low: low)
        }
    }

    /// A list of Rave IDs, at most `limit` long.
    static func raveIDs(_ texts: [String], field: String, limit: Int = 1000) throws(RPCError) -> [RaveID] {
        guard texts.count <= limit else {
            throw .invalidArgument("\(field) may hold at most \(limit) ids, got \(texts.count)")
        }
        var ids: [RaveID] = []
        ids.reserveCapacity(texts.count)
        for (index, text) in texts.enumerated() {
            ids.append(try raveID(text, field: "\(field)[\(index)]"))
        }
        return ids
    }

    /// Text of 1…`maximum` characters (or empty when `allowEmpty`).
    static func text(
        _ value: String, field: String, maximum: Int, allowEmpty: Bool = false
    ) throws(RPCError) -> String {
        if value.isEmpty, allowEmpty { return value }
        guard !value.isEmpty, value.count <= maximum else {
            throw .invalidArgument("\(field) must be 1…\(maximum) characters, got \(value.count)")
        }
        return value
    }

    /// An email address: one "@", a non-empty local part, a dotted domain, at most 254 characters.
    static func email(_ value: String) throws(RPCError) -> String {
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        let valid =
            value.count <= 254 && parts.count == 2 && !parts[0].isEmpty && parts[0].count <= 64
            && parts[1].contains(".") && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".")
            && !value.contains(where: { $0.isWhitespace })
        guard valid else {
            throw .invalidArgument("email must be an address like name@example.com, got \(quoted(value))")
        }
        return value
    }

    /// A username: 3…32 letters, digits, "_", "." or "-".
    static func username(_ value: String) throws(RPCError) -> String {
        let allowed = value.unicodeScalars.allSatisfy {
            ($0.isASCII && (CharacterSet.alphanumerics.contains($0))) || "_.-".unicodeScalars.contains($0)
        }
        guard (3...32).contains(value.count), allowed else {
            throw .invalidArgument("username must be 3…32 letters, digits, '_', '.' or '-', got \(quoted(value))")
        }
        return value
    }

    /// A password: 8…128 characters.
    static func password(_ value: String) throws(RPCError) -> String {
        guard (8...128).contains(value.count) else {
            throw .invalidArgument("password must be 8…128 characters, got \(value.count)")
        }
        return value
    }

    /// An ISO 3166-1 alpha-2 country code; lower case is accepted and upper-cased.
    static func country(_ value: String) throws(RPCError) -> String {
        let upper = value.uppercased()
        guard upper.count == 2, upper.unicodeScalars.allSatisfy({ $0.isASCII && ("A"..."Z").contains($0) }) else {
            throw .invalidArgument("country must be a two-letter ISO 3166-1 code, got \(quoted(value))")
        }
        return upper
    }

    /// A birth year between 1900 and this year.
    static func birthYear(_ value: Int32, now: Date = Date()) throws(RPCError) -> Int32 {
        let year = Int32(Calendar(identifier: .gregorian).component(.year, from: now))
        guard (1900...year).contains(value) else {
            throw .invalidArgument("birth_year must be 1900…\(year), got \(value)")
        }
        return value
    }

    /// A date "YYYY-MM-DD" that exists, between 1900-01-01 and today.
    static func birthDate(_ value: String) throws(RPCError) -> String {
        let parts = value.split(separator: "-")
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        guard value.count == 10, parts.count == 3, let year = Int(parts[0]), let month = Int(parts[1]),
            let day = Int(parts[2]),
            let date = calendar.date(from: DateComponents(year: year, month: month, day: day)),
            calendar.component(.day, from: date) == day, year >= 1900, date <= Date()
        else { throw .invalidArgument("birth_date must be a past date written YYYY-MM-DD, got \(quoted(value))") }
        return value
    }

    /// A picture URL: http(s), at most 1024 characters.
    static func pictureURL(_ value: String) throws(RPCError) -> String {
        guard value.count <= 1024, value.hasPrefix("https://") || value.hasPrefix("http://"),
            URL(string: value)?.host != nil
        else { throw .invalidArgument("picture_url must be an http(s) URL of at most 1024 characters") }
        return value
    }

    /// A device: id 1…128 characters, name ≤ 128, platform ≤ 64.
    static func device(_ device: IdentityV1.DeviceInfo?) throws(RPCError) -> IdentityV1.DeviceInfo {
        guard let device else { throw .invalidArgument("device is required (device_id 1…128 characters)") }
        _ = try text(device.deviceId, field: "device.device_id", maximum: 128)
        _ = try text(device.name, field: "device.name", maximum: 128, allowEmpty: true)
        _ = try text(device.platform, field: "device.platform", maximum: 64, allowEmpty: true)
        return device
    }

    /// The value for an error message: quoted, and cut short so a megabyte of input does not echo back.
    static func quoted(_ value: String) -> String {
        value.count <= 64 ? "\"\(value)\"" : "\"\(value.prefix(64))…\" (\(value.count) characters)"
    }
}

extension Date {
    /// Milliseconds since 1970, as the protocol's `*_unix_ms` fields carry time.
    var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
}
