import RavePostgres

/// A one-dimensional PostgreSQL array parameter of fixed-width values, encoded in one pass into one buffer.
///
/// The group commit sends its batch as five arrays per statement. The generic `[Element]` parameter builds a
/// `PostgresValue` (an allocation) per element and reads them through a key path resolved at run time; this
/// writes the binary array format (header, then a length and the bytes per element) straight into one buffer.
struct BinaryArrayParameter: PostgresEncodable {
    let postgresValue: PostgresValue?

    /// `elementType` is the elements' type (`.int8`), `arrayType` the array's (`.int8Array`), `width` the bytes of
    /// one element.
    init<Elements: Collection>(
        _ elements: Elements, elementType: PostgresType, arrayType: PostgresType, width: Int
    ) where Elements.Element: PostgresBinaryEncodable {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + elements.count * (4 + width))
        Self.append(Int32(elements.isEmpty ? 0 : 1), to: &bytes)
        // No element is NULL.
        Self.append(Int32(0), to: &bytes)
        Self.append(elementType.oid, to: &bytes)
        if !elements.isEmpty {
            Self.append(Int32(elements.count), to: &bytes)
            // The lower bound: PostgreSQL arrays count from 1.
            Self.append(Int32(1), to: &bytes)
        }
        for element in elements {
            Self.append(Int32(width), to: &bytes)
            element.appendPostgresBinary(to: &bytes)
        }
        postgresValue = PostgresValue(type: arrayType, bytes: bytes)
    }

    static func int8(_ values: some Collection<Int64>) -> Self {
        Self(values, elementType: .int8, arrayType: .int8Array, width: 8)
    }

    static func int4(_ values: some Collection<Int32>) -> Self {
        Self(values, elementType: .int4, arrayType: .int4Array, width: 4)
    }

    static func uuid(_ values: some Collection<RaveID>) -> Self {
        Self(values, elementType: .uuid, arrayType: .uuidArray, width: 16)
    }

    private static func append<Value: FixedWidthInteger>(_ value: Value, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
