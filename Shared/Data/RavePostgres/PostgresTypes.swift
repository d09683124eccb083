import Foundation

/// A 16-byte identifier stored as PostgreSQL `uuid`; Rave IDs are these.
///
/// Kept free of Foundation's `UUID` so hot paths format and parse without bridging.
public struct RaveID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses the canonical 36-character form ("4f0c…-…") or 32 bare hex digits of either case.
    ///
    /// Nil for anything else. For configuration and tools; ids in requests go through `init(wire:)`.
    public init?(_ text: some StringProtocol) {
        guard let (high, low) = Self.parse(text.utf8) else { return nil }
        self.init(high: high, low: low)
    }

    /// The same for a `String`, the common case: a concrete overload, so the parse is specialized for its UTF-8
    /// view (through the generic one, every byte went through protocol witnesses).
    public init?(_ text: String) {
        guard let (high, low) = Self.parse(text.utf8) else { return nil }
        self.init(high: high, low: low)
    }

    /// Parses the one spelling the protocol uses for Rave IDs and every other id: 32 lowercase hex digits.
    ///
    /// No dashes (DESIGN.md §1). Upper case, dashes and braces are refused, not normalised, by every service
    /// alike, so one id never has two spellings.
    ///
    /// One pass over the UTF-8 bytes: a call may carry a thousand ids.
    public init?(wire text: String) {
        var text = text
        let halves = text.withUTF8 { bytes -> (UInt64, UInt64)? in
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
            return (high, low)
        }
        guard let (high, low) = halves else { return nil }
        self.init(high: high, low: low)
    }

    /// 32 hex digits, with no dashes or with exactly four anywhere, into the two halves; nil otherwise.
    private static func parse(_ utf8: some Sequence<UInt8>) -> (high: UInt64, low: UInt64)? {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var digits = 0
        var dashes = 0
        for byte in utf8 {
            if byte == UInt8(ascii: "-") {
                dashes += 1
                continue
            }
            guard digits < 32, let digit = hexValue(byte) else { return nil }
            if digits < 16 {
                high = high << 4 | UInt64(digit)
            } else {
                low = low << 4 | UInt64(digit)
            }
            digits += 1
        }
        guard digits == 32, dashes == 0 || dashes == 4 else { return nil }
        return (high, low)
    }

    /// A random version-4 identifier.
    public static func random() -> RaveID {
        var generator = SystemRandomNumberGenerator()
        let high = (generator.next() & ~0xf000) | 0x4000
        let low = (generator.next() & ~(0xc000_0000_0000_0000 as UInt64)) | 0x8000_0000_0000_0000
        return RaveID(high: high, low: low)
    }

    /// A version-7 identifier: the Unix time in milliseconds, then 74 random bits.
    ///
    /// Ids made one after another sort in time order (within a millisecond, randomly), so a primary-key index
    /// of them grows at its right edge instead of touching a random page per insert. Use it for rows that are
    /// only appended (ledger transfers); it reveals when the id was made.
    public static func timeOrdered() -> RaveID {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let milliseconds = UInt64(max(0, now.tv_sec)) &* 1000 &+ UInt64(max(0, now.tv_nsec)) / 1_000_000
        var generator = SystemRandomNumberGenerator()
        let high = milliseconds << 16 | 0x7000 | (generator.next() & 0x0fff)
        let low = (generator.next() & ~(0xc000_0000_0000_0000 as UInt64)) | 0x8000_0000_0000_0000
        return RaveID(high: high, low: low)
    }

    /// The 16 bytes, most significant first.
    public var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        appendBigEndian(high, to: &bytes)
        appendBigEndian(low, to: &bytes)
        return bytes
    }

    /// The wire form every service uses: 32 lowercase hex digits, no dashes (formatted by hand: lists of a
    /// thousand ids are a hot path).
    public var hex: String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            for index in 0..<16 {
                let word = index < 8 ? high : low
                let byte = UInt8(truncatingIfNeeded: word >> (UInt64(7 - index % 8) * 8))
                buffer[index * 2] = Self.hexDigits[Int(byte >> 4)]
                buffer[index * 2 + 1] = Self.hexDigits[Int(byte & 0xf)]
            }
            return 32
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    public var description: String {
        let hex = Self.hexDigits
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public static func < (lhs: RaveID, rhs: RaveID) -> Bool { (lhs.high, lhs.low) < (rhs.high, rhs.low) }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension RaveID: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? { PostgresValue(type: .uuid, bytes: bytes) }

    public init(postgresCell cell: PostgresCell) throws {
        guard cell.type == .uuid, cell.bytes.count == 16 else { throw cell.typeMismatch(RaveID.self) }
        let start = cell.bytes.startIndex
        high = cell.bytes[start..<start + 8].reduce(0) { $0 << 8 | UInt64($1) }
        low = cell.bytes[start + 8..<start + 16].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// A `timestamptz`: microseconds since the Unix epoch, UTC, exactly as precise as PostgreSQL.
public struct PostgresTimestamp: Hashable, Sendable, Comparable {
    public var microsecondsSinceEpoch: Int64

    public init(microsecondsSinceEpoch: Int64) { self.microsecondsSinceEpoch = microsecondsSinceEpoch }

    /// `date`, or infinity (`.infinity`, `.minusInfinity`) beyond what this type and `timestamptz` both hold (about
    /// 292,277 AD; 4714 BC): times come from clients, and converting a far one must not trap.
    public init(_ date: Date) {
        let microseconds = (date.timeIntervalSince1970 * 1_000_000).rounded()
        if microseconds >= Double(Int64.max) {
            self = .infinity
        } else if microseconds < Double(Self.earliest) || microseconds.isNaN {
            self = .minusInfinity
        } else {
            microsecondsSinceEpoch = Int64(microseconds)
        }
    }

    /// PostgreSQL's `infinity` and `-infinity`, the extreme integers here as on the wire.
    public static let infinity = PostgresTimestamp(microsecondsSinceEpoch: .max)
    public static let minusInfinity = PostgresTimestamp(microsecondsSinceEpoch: .min)
    /// The first microsecond `timestamptz` holds (4714-11-24 00:00:00 BC), Unix.
    public static let earliest: Int64 = -210_866_803_200_000_000

    /// The current wall-clock time.
    public static func now() -> PostgresTimestamp { PostgresTimestamp(Date()) }

    public var date: Date { Date(timeIntervalSince1970: Double(microsecondsSinceEpoch) / 1_000_000) }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.microsecondsSinceEpoch < rhs.microsecondsSinceEpoch }

    /// PostgreSQL counts from 2000-01-01 rather than 1970-01-01.
    static let postgresEpochOffset: Int64 = 946_684_800_000_000
}

extension PostgresTimestamp: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? {
        var bytes: [UInt8] = []
        // Infinity is the extreme integer on the wire too; every finite value is within range after the shift.
        let wire =
            switch microsecondsSinceEpoch {
            case .max, .min: microsecondsSinceEpoch
            default: microsecondsSinceEpoch - Self.postgresEpochOffset
            }
        appendBigEndian(wire, to: &bytes)
        return PostgresValue(type: .timestamptz, bytes: bytes)
    }

    public init(postgresCell cell: PostgresCell) throws {
        guard cell.type == .timestamptz || cell.type == .timestamp else {
            throw cell.typeMismatch(PostgresTimestamp.self)
        }
        let wire = try cell.integer(Int64.self)
        // Times after about 292,277 AD fit PostgreSQL's range but not this type's: they read as infinity.
        let (shifted, overflow) = wire.addingReportingOverflow(Self.postgresEpochOffset)
        microsecondsSinceEpoch = wire == .min ? .min : overflow ? .max : shifted
    }
}

extension Date: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? { PostgresTimestamp(self).postgresValue }
    public init(postgresCell cell: PostgresCell) throws { self = try PostgresTimestamp(postgresCell: cell).date }
}

/// A `date`: a day of the proleptic Gregorian calendar, without time or time zone.
///
/// Sent and read in PostgreSQL's binary form, the number of days since 2000-01-01. Build one from its parts or
/// from "YYYY-MM-DD" text; both refuse a day that does not exist (2001-02-29, month 13).
public struct PostgresDate: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Days since 2000-01-01 (negative before it), as PostgreSQL counts.
    public var daysSince2000: Int32

    public init(daysSince2000: Int32) { self.daysSince2000 = daysSince2000 }

    /// The date with these parts; nil unless the day exists (years 1…9999).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month),
            (1...Self.daysInMonth(month, year: year)).contains(day)
        else { return nil }
        daysSince2000 = Int32(Self.daysFromCivil(year: year, month: month, day: day) - Self.daysFrom1970To2000)
    }

    /// Parses exactly "YYYY-MM-DD" (ASCII digits, a day that exists); nil for anything else.
    public init?(iso text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10) else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// The day as year, month (1…12) and day of month.
    public var parts: (year: Int, month: Int, day: Int) {
        Self.civil(fromDays: Int(daysSince2000) + Self.daysFrom1970To2000)
    }

    /// "YYYY-MM-DD".
    public var iso: String {
        let (year, month, day) = parts
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))"
    }

    public var description: String { iso }

    /// The UTC day `date` falls on.
    public init(_ date: Date) {
        let days = (date.timeIntervalSince1970 / 86_400).rounded(.down)
        daysSince2000 = Int32(clamping: Int(days) - Self.daysFrom1970To2000)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.daysSince2000 < rhs.daysSince2000 }

    static let daysFrom1970To2000 = 10_957

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm, exact for the proleptic calendar).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a count of days since 1970-01-01 (the inverse of `daysFromCivil`).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension PostgresDate: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? {
        var bytes: [UInt8] = []
        appendBigEndian(daysSince2000, to: &bytes)
        return PostgresValue(type: .date, bytes: bytes)
    }

    public init(postgresCell cell: PostgresCell) throws {
        guard cell.type == .date else { throw cell.typeMismatch(PostgresDate.self) }
        daysSince2000 = try cell.integer(Int32.self)
    }
}

// MARK: - Arrays

/// A type that can be an element of a one-dimensional PostgreSQL array parameter or column.
public protocol PostgresArrayElement: PostgresEncodable, PostgresDecodable {
    /// The element's PostgreSQL type.
    static var postgresElementType: PostgresType { get }

    /// Appends the element as an array element: its length, then its binary form, or the length -1 alone for
    /// NULL. Returns false when it wrote NULL.
    ///
    /// Arrays are written element by element into one buffer; the default goes through `postgresValue` (a
    /// buffer per element), the common types write themselves directly.
    func appendPostgresArrayElement(to bytes: inout [UInt8]) -> Bool
}

extension PostgresArrayElement {
    public func appendPostgresArrayElement(to bytes: inout [UInt8]) -> Bool {
        guard let value = postgresValue else {
            appendBigEndian(Int32(-1), to: &bytes)
            return false
        }
        appendBigEndian(Int32(value.bytes.count), to: &bytes)
        bytes.append(contentsOf: value.bytes)
        return true
    }
}

extension String: PostgresArrayElement {
    public static var postgresElementType: PostgresType { .text }

    public func appendPostgresArrayElement(to bytes: inout [UInt8]) -> Bool {
        appendBigEndian(Int32(utf8.count), to: &bytes)
        bytes.append(contentsOf: utf8)
        return true
    }
}

extension Int64: PostgresArrayElement {
    public static var postgresElementType: PostgresType { .int8 }

    public func appendPostgresArrayElement(to bytes: inout [UInt8]) -> Bool {
        appendBigEndian(Int32(8), to: &bytes)
        appendBigEndian(self, to: &bytes)
        return true
    }
}

extension Int: PostgresArrayElement {
    public static var postgresElementType: PostgresType { .int8 }

    public func appendPostgresArrayElement(to bytes: inout [UInt8]) -> Bool {
        Int64(self).appendPostgresArrayElement(to: &bytes)
    }
}

extension Int32: PostgresArrayElement {
    public static var postgresElementType: PostgresType { .int4 }

    public func appendPostgresArrayElement(to bytes: inout [UInt8]) -> Bool {
        appendBigEndian(Int32(4), to: &bytes)
        appendBigEndian(self, to: &bytes)
        return true
    }
}

extension RaveID: PostgresArrayElement {
    public static var postgresElementType: PostgresType { .uuid }

    public func appendPostgresArrayElement(to bytes: inout [UInt8]) -> Bool {
        appendBigEndian(Int32(16), to: &bytes)
        appendBigEndian(high, to: &bytes)
        appendBigEndian(low, to: &bytes)
        return true
    }
}

extension UInt8: PostgresArrayElement {
    /// Only `[UInt8]` (sent as `bytea`) uses this conformance; a lone byte travels as `int2`.
    public static var postgresElementType: PostgresType { .int2 }

    public var postgresValue: PostgresValue? {
        var bytes: [UInt8] = []
        appendBigEndian(Int16(self), to: &bytes)
        return PostgresValue(type: .int2, bytes: bytes)
    }

    public init(postgresCell cell: PostgresCell) throws {
        guard let value = UInt8(exactly: try Int64(postgresCell: cell)) else { throw cell.typeMismatch(UInt8.self) }
        self = value
    }
}

extension Array: PostgresArrayElement where Element == UInt8 {
    /// `[[UInt8]]` is sent as `bytea[]`.
    public static var postgresElementType: PostgresType { .bytea }

    public func appendPostgresArrayElement(to bytes: inout [UInt8]) -> Bool {
        appendBigEndian(Int32(count), to: &bytes)
        bytes.append(contentsOf: self)
        return true
    }
}

/// PostgreSQL's binary array format: dimensions, a null flag, the element type, then length-prefixed elements.
@usableFromInline
enum PostgresArrayCoding {
    @usableFromInline
    static let arrayTypes: [PostgresType: PostgresType] = [
        .text: .textArray, .int8: .int8Array, .int4: .int4Array, .uuid: .uuidArray, .bytea: .byteaArray,
    ]

    /// `elements` as one array value, written in one pass into one buffer.
    ///
    /// Inlinable so that a caller in another module (`PostgresArrayParameter` over a service's lazy columns) gets
    /// a loop specialized for its collection: unspecialized, every element went through a boxed copy on the heap.
    @inlinable
    static func encode<Elements: Collection>(_ elements: Elements) -> PostgresValue
    where Elements.Element: PostgresArrayElement {
        let elementType = Elements.Element.postgresElementType
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + elements.count * 12)
        appendHeader(elementType: elementType, count: elements.count, hasNulls: false, to: &bytes)
        var hasNulls = false
        for element in elements where !element.appendPostgresArrayElement(to: &bytes) {
            hasNulls = true
        }
        // The null flag is the header's second big-endian Int32; it is known only once the elements are written.
        if hasNulls { bytes[7] = 1 }
        return PostgresValue(type: arrayTypes[elementType] ?? .unspecified, bytes: bytes)
    }

    /// A one-dimensional array's header: dimensions, the null flag, the element type and, when not empty, the
    /// length and lower bound (PostgreSQL arrays start at 1).
    @usableFromInline
    static func appendHeader(elementType: PostgresType, count: Int, hasNulls: Bool, to bytes: inout [UInt8]) {
        appendBigEndian(Int32(count == 0 ? 0 : 1), to: &bytes)
        appendBigEndian(Int32(hasNulls ? 1 : 0), to: &bytes)
        appendBigEndian(elementType.oid, to: &bytes)
        if count > 0 {
            appendBigEndian(Int32(count), to: &bytes)
            appendBigEndian(Int32(1), to: &bytes)
        }
    }

    static func decode<Element: PostgresArrayElement>(_ cell: PostgresCell, as: Element.Type) throws -> [Element] {
        var reader = ByteReader(bytes: cell.bytes, cell: cell)
        let dimensions = try reader.int32()
        _ = try reader.int32()
        let elementType = PostgresType(oid: UInt32(bitPattern: try reader.int32()))
        guard dimensions <= 1 else {
            throw PostgresError(.decoding, "column \"\(cell.column)\" is a \(dimensions)-dimensional array")
        }
        guard dimensions == 1 else { return [] }
        let count = Int(try reader.int32())
        _ = try reader.int32()
        var elements: [Element] = []
        elements.reserveCapacity(count)
        for _ in 0..<count {
            let length = Int(try reader.int32())
            if length < 0 {
                elements.append(try Element.decodeNull(column: cell.column))
            } else {
                let slice = try reader.take(length)
                elements.append(
                    try Element(postgresCell: PostgresCell(column: cell.column, type: elementType, bytes: slice)))
            }
        }
        return elements
    }

    private struct ByteReader {
        var bytes: ArraySlice<UInt8>
        let cell: PostgresCell

        mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard count <= bytes.count else { throw PostgresError(.decoding, "column \"\(cell.column)\" is truncated") }
            let slice = bytes.prefix(count)
            bytes = bytes.dropFirst(count)
            return slice
        }

        mutating func int32() throws -> Int32 {
            try take(4).reduce(0) { $0 << 8 | Int32($1) }
        }
    }
}
