import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime

/// Checks of client input, each failing with INVALID_ARGUMENT and a message that says what is allowed.
enum Validation {
    /// A Rave ID (user, app, publisher, session, merge): 32 lowercase hex digits, as every service reads them.
    static func raveID(_ text: String, field: @autoclosure () -> String) throws(IdentityError) -> RaveID {
        try IdentityError.checking { () throws(RPCError) in try RequestChecks.raveID(text, field: field()) }
    }

    /// A list of Rave IDs, at most `limit` long.
    static func raveIDs(_ texts: [String], field: String, limit: Int = 1000) throws(IdentityError) -> [RaveID] {
        try IdentityError.checking { () throws(RPCError) in
            try RequestChecks.raveIDs(texts, field: field, maximum: limit)
        }
    }

    /// A display name (global or app-scoped): `TextRule.displayName`, the rule every service applies.
    static func displayName(_ value: String) throws(IdentityError) -> String {
        try IdentityError.checking { () throws(RPCError) in try TextRule.displayName.check(value, field: "display_name")
        }
    }

    /// Text of 1…`maximum` characters (or empty when `allowEmpty`), counted as the database's `length()`
    /// counts them (Unicode code points), so the table's check never refuses what passed here.
    static func text(
        _ value: String, field: String, maximum: Int, allowEmpty: Bool = false
    ) throws(IdentityError) -> String {
        if value.isEmpty, allowEmpty { return value }
        let count = value.unicodeScalars.count
        guard count > 0, count <= maximum else {
            throw .invalidArgument("\(field) must be 1…\(maximum) characters (Unicode code points), got \(count)")
        }
        return value
    }

    /// An email address: one "@", a non-empty local part, a dotted domain, at most 254 characters.
    static func email(_ value: String) throws(IdentityError) -> String {
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        let valid =
            (3...254).contains(value.unicodeScalars.count) && parts.count == 2 && !parts[0].isEmpty
            && parts[0].unicodeScalars.count <= 64 && parts[1].contains(".") && !parts[1].hasPrefix(".")
            && !parts[1].hasSuffix(".") && !value.contains(where: { $0.isWhitespace })
            && !value.unicodeScalars.contains(where: TextRule.isControl)
        guard valid else {
            throw .invalidArgument("email must be an address like name@example.com, got \(quoted(value))")
        }
        return value
    }

    /// A username: 3…32 letters, digits, "_", "." or "-".
    static func username(_ value: String) throws(IdentityError) -> String {
        let allowed = value.unicodeScalars.allSatisfy {
            ($0.isASCII && (CharacterSet.alphanumerics.contains($0))) || "_.-".unicodeScalars.contains($0)
        }
        guard (3...32).contains(value.count), allowed else {
            throw .invalidArgument("username must be 3…32 letters, digits, '_', '.' or '-', got \(quoted(value))")
        }
        return value
    }

    /// A password: 8…128 characters.
    static func password(_ value: String, field: String = "password") throws(IdentityError) -> String {
        guard (8...128).contains(value.count) else {
            throw .invalidArgument("\(field) must be 8…128 characters, got \(value.count)")
        }
        return value
    }

    /// An operator's reason (a ban's, shown to the player; an unban's): 1…500 characters, no control characters.
    static func reason(_ value: String) throws(IdentityError) -> String {
        _ = try text(value, field: "reason", maximum: 500)
        guard !value.unicodeScalars.contains(where: TextRule.isControl) else {
            throw .invalidArgument("reason must not hold control characters (line breaks, tabs, …)")
        }
        return value
    }

    /// The reason the audit log records for a change whose own `reason` field the player sees (a ban's message):
    /// the caller's `rave-reason` (HTTP `X-Rave-Reason`) when given, held to the same rules, else `shown`.
    static func auditReason(shown: String, context: RequestContext) throws(IdentityError) -> String {
        guard let given = context.metadata[MetadataKey.reason], !given.isEmpty else { return shown }
        return try reason(given)
    }

    /// An ISO 3166-1 alpha-2 country code; lower case is accepted and upper-cased.
    static func country(_ value: String) throws(IdentityError) -> String {
        let upper = value.uppercased()
        guard upper.count == 2, upper.unicodeScalars.allSatisfy({ $0.isASCII && ("A"..."Z").contains($0) }) else {
            throw .invalidArgument("country must be a two-letter ISO 3166-1 code, got \(quoted(value))")
        }
        return upper
    }

    /// A birth year between 1900 and this year.
    static func birthYear(_ value: Int32, now: Date = Date()) throws(IdentityError) -> Int32 {
        let year = Int32(Calendar(identifier: .gregorian).component(.year, from: now))
        guard (1900...year).contains(value) else {
            throw .invalidArgument("birth_year must be 1900…\(year), got \(value)")
        }
        return value
    }

    /// A date "YYYY-MM-DD" that exists, between 1900-01-01 and today (UTC), checked here so that nothing the
    /// database would refuse reaches it.
    static func birthDate(_ value: String, now: Date = Date()) throws(IdentityError) -> PostgresDate {
        guard let date = PostgresDate(iso: value) else {
            throw .invalidArgument("birth_date must be a date written YYYY-MM-DD that exists, got \(quoted(value))")
        }
        let earliest = PostgresDate(year: 1900, month: 1, day: 1)!
        let today = PostgresDate(now)
        guard date >= earliest, date <= today else {
            throw .invalidArgument("birth_date must be \(earliest.iso)…\(today.iso), got \(quoted(value))")
        }
        return date
    }

    /// A picture URL: http(s), at most 1024 characters.
    static func pictureURL(_ value: String) throws(IdentityError) -> String {
        guard value.count <= 1024, value.hasPrefix("https://") || value.hasPrefix("http://"),
            URL(string: value)?.host != nil
        else { throw .invalidArgument("picture_url must be an http(s) URL of at most 1024 characters") }
        return value
    }

    /// A device: id 1…128 characters, name ≤ 128, platform ≤ 64.
    static func device(_ device: IdentityV1.DeviceInfo?) throws(IdentityError) -> IdentityV1.DeviceInfo {
        guard let device else { throw .invalidArgument("device is required (device_id 1…128 characters)") }
        _ = try text(device.deviceId, field: "device.device_id", maximum: 128)
        _ = try text(device.name, field: "device.name", maximum: 128, allowEmpty: true)
        _ = try text(device.platform, field: "device.platform", maximum: 64, allowEmpty: true)
        return device
    }

    /// The value for an error message: quoted, control characters escaped, cut short so a megabyte of input
    /// does not echo back.
    static func quoted(_ value: String) -> String {
        RequestChecks.quoted(value)
    }
}

extension Date {
    /// Milliseconds since 1970, as the protocol's `*_unix_ms` fields carry time.
    var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    /// The time `milliseconds` after 1970, as the protocol's `*_unix_ms` fields carry it.
    init(unixMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }
}
