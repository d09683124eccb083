/// A PostgreSQL type, by its object id (OID); only the types this module encodes or decodes are named.
public struct PostgresType: Hashable, Sendable, CustomStringConvertible {
    public let oid: UInt32

    public init(oid: UInt32) { self.oid = oid }

    public static let unspecified = PostgresType(oid: 0)
    public static let bool = PostgresType(oid: 16)
    public static let bytea = PostgresType(oid: 17)
    public static let name = PostgresType(oid: 19)
    public static let int8 = PostgresType(oid: 20)
    public static let int2 = PostgresType(oid: 21)
    public static let int4 = PostgresType(oid: 23)
    public static let text = PostgresType(oid: 25)
    public static let json = PostgresType(oid: 114)
    public static let float8 = PostgresType(oid: 701)
    public static let bpchar = PostgresType(oid: 1042)
    public static let date = PostgresType(oid: 1082)
    public static let varchar = PostgresType(oid: 1043)
    public static let timestamp = PostgresType(oid: 1114)
    public static let timestamptz = PostgresType(oid: 1184)
    public static let uuid = PostgresType(oid: 2950)
    public static let jsonb = PostgresType(oid: 3802)
    public static let int4Array = PostgresType(oid: 1007)
    public static let textArray = PostgresType(oid: 1009)
    public static let int8Array = PostgresType(oid: 1016)
    public static let uuidArray = PostgresType(oid: 2951)
    public static let byteaArray = PostgresType(oid: 1001)

    public var description: String { "oid \(oid)" }

    var isTextLike: Bool { [.text, .varchar, .bpchar, .name, .json, .unspecified].contains(self) }
}

/// One non-NULL value in PostgreSQL's binary wire format, ready to send as a parameter.
public struct PostgresValue: Sendable, Hashable {
    public var type: PostgresType
    public var bytes: [UInt8]

    public init(type: PostgresType, bytes: [UInt8]) {
        self.type = type
        self.bytes = bytes
    }
}

/// A Swift value that can be sent as a statement parameter.
public protocol PostgresEncodable {
    /// The value in binary format, or nil for SQL NULL.
    var postgresValue: PostgresValue? { get }
}

/// One cell of a result row, as the server sent it (binary format).
public struct PostgresCell {
    public let column: String
    public let type: PostgresType
    /// The bytes of a non-NULL value.
    public let bytes: ArraySlice<UInt8>

    public init(column: String, type: PostgresType, bytes: ArraySlice<UInt8>) {
        self.column = column
        self.type = type
        self.bytes = bytes
    }

    /// The error for a cell whose type the requested Swift type cannot hold.
    public func typeMismatch(_ swiftType: Any.Type) -> PostgresError {
        PostgresError(.decoding, "column \"\(column)\" of type \(type) cannot be decoded as \(swiftType)")
    }

    /// A big-endian integer of exactly `T`'s size.
    func integer<T: FixedWidthInteger>(_: T.Type) throws -> T {
        guard bytes.count == MemoryLayout<T>.size else { throw typeMismatch(T.self) }
        return bytes.reduce(T.zero) { $0 << 8 | T($1) }
    }
}

/// A Swift value that can be read from a result column.
public protocol PostgresDecodable {
    /// Decodes a non-NULL cell.
    init(postgresCell cell: PostgresCell) throws
    /// The value for SQL NULL; non-optional types throw.
    static func decodeNull(column: String) throws -> Self
}

extension PostgresDecodable {
    public static func decodeNull(column: String) throws -> Self {
        throw PostgresError.unexpectedNull(column: column)
    }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public var postgresValue: PostgresValue? { self?.postgresValue }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = try Wrapped(postgresCell: cell) }
    public static func decodeNull(column: String) throws -> Self { nil }
}

/// Appends `value` big-endian.
@inline(__always)
func appendBigEndian<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
    withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
}

// MARK: - Integers, booleans, floating point

extension Int64: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8)
        appendBigEndian(self, to: &bytes)
        return PostgresValue(type: .int8, bytes: bytes)
    }

    public init(postgresCell cell: PostgresCell) throws {
        switch cell.type {
        case .int8: self = try cell.integer(Int64.self)
        case .int4: self = Int64(try cell.integer(Int32.self))
        case .int2: self = Int64(try cell.integer(Int16.self))
        default: throw cell.typeMismatch(Int64.self)
        }
    }
}

extension Int: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? { Int64(self).postgresValue }
    public init(postgresCell cell: PostgresCell) throws { self = Int(try Int64(postgresCell: cell)) }
}

extension Int32: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? {
        var bytes: [UInt8] = []
        appendBigEndian(self, to: &bytes)
        return PostgresValue(type: .int4, bytes: bytes)
    }

    public init(postgresCell cell: PostgresCell) throws {
        let wide = try Int64(postgresCell: cell)
        guard let narrow = Int32(exactly: wide) else {
            throw PostgresError(.decoding, "column \"\(cell.column)\" value \(wide) does not fit in Int32")
        }
        self = narrow
    }
}

extension Bool: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? { PostgresValue(type: .bool, bytes: [self ? 1 : 0]) }

    public init(postgresCell cell: PostgresCell) throws {
        guard cell.type == .bool, cell.bytes.count == 1 else { throw cell.typeMismatch(Bool.self) }
        self = cell.bytes.first != 0
    }
}

extension Double: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? {
        var bytes: [UInt8] = []
        appendBigEndian(bitPattern, to: &bytes)
        return PostgresValue(type: .float8, bytes: bytes)
    }

    public init(postgresCell cell: PostgresCell) throws {
        guard cell.type == .float8 else { throw cell.typeMismatch(Double.self) }
        self = Double(bitPattern: try cell.integer(UInt64.self))
    }
}

// MARK: - Text, bytes, JSON

extension String: PostgresEncodable, PostgresDecodable {
    public var postgresValue: PostgresValue? { PostgresValue(type: .text, bytes: Array(utf8)) }

    public init(postgresCell cell: PostgresCell) throws {
        if cell.type == .jsonb {
            self = try PostgresJSON(postgresCell: cell).text
        } else if cell.type.isTextLike {
            self = String(decoding: cell.bytes, as: UTF8.self)
        } else {
            throw cell.typeMismatch(String.self)
        }
    }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    /// `[UInt8]` is sent as `bytea`; other element types as a one-dimensional PostgreSQL array.
    public var postgresValue: PostgresValue? {
        // The element type decides, not a cast: an empty array of any element type casts to [UInt8], and a
        // dynamic cast copies the array element by element (~4 µs per wallet bet for a round's results).
        if Element.self == UInt8.self {
            return PostgresValue(type: .bytea, bytes: unsafeBitCast(self, to: [UInt8].self))
        }
        // This conformance is generic, so called through `PostgresEncodable` it runs unspecialized: every element
        // went through a boxed copy, a heap allocation each (a third of the wallet's mallocs, from its rounds'
        // column arrays). The element types the services send get a specialized loop.
        if Element.self == String.self { return PostgresArrayCoding.encode(unsafeBitCast(self, to: [String].self)) }
        if Element.self == Int64.self { return PostgresArrayCoding.encode(unsafeBitCast(self, to: [Int64].self)) }
        if Element.self == Int32.self { return PostgresArrayCoding.encode(unsafeBitCast(self, to: [Int32].self)) }
        if Element.self == Int.self { return PostgresArrayCoding.encode(unsafeBitCast(self, to: [Int].self)) }
        if Element.self == RaveID.self { return PostgresArrayCoding.encode(unsafeBitCast(self, to: [RaveID].self)) }
        if Element.self == [UInt8].self {
            return PostgresArrayCoding.encode(unsafeBitCast(self, to: [[UInt8]].self))
        }
        return PostgresArrayCoding.encode(self)
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    public init(postgresCell cell: PostgresCell) throws {
        if Element.self == UInt8.self, cell.type == .bytea {
            self = unsafeBitCast([UInt8](cell.bytes), to: Self.self)
            return
        }
        self = try PostgresArrayCoding.decode(cell, as: Element.self)
    }
}

/// A JSON document stored as `jsonb`, kept as its text so callers choose how (and whether) to parse it.
public struct PostgresJSON: Sendable, Hashable, PostgresEncodable, PostgresDecodable {
    public var text: String

    public init(_ text: String) { self.text = text }

    public var postgresValue: PostgresValue? {
        // Binary jsonb is a version byte (1) followed by the JSON text.
        PostgresValue(type: .jsonb, bytes: [1] + Array(text.utf8))
    }

    public init(postgresCell cell: PostgresCell) throws {
        switch cell.type {
        case .jsonb:
            guard cell.bytes.first == 1 else { throw cell.typeMismatch(PostgresJSON.self) }
            text = String(decoding: cell.bytes.dropFirst(), as: UTF8.self)
        case .json, .text:
            text = String(decoding: cell.bytes, as: UTF8.self)
        default:
            throw cell.typeMismatch(PostgresJSON.self)
        }
    }
}
