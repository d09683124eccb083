/// A whole column as one array parameter, written straight into PostgreSQL's binary array format.
///
/// Batched statements send columns of hundreds of elements as `unnest($1::bigint[], …)` parameters. The generic
/// `[Element]` encoding builds a `PostgresValue` (an allocation) per element first; for the wallet's rounds and the
/// leaderboards' group commits that cost more CPU than the rest of their statements. This writes every element
/// into one buffer. The elements are never NULL.
public struct PostgresArrayParameter: PostgresEncodable {
    public let postgresValue: PostgresValue?

    public init(_ ids: some Collection<RaveID>) {
        var bytes = Self.header(elementType: .uuid, count: ids.count, bodySize: ids.count * 20)
        for id in ids {
            appendBigEndian(Int32(16), to: &bytes)
            appendBigEndian(id.high, to: &bytes)
            appendBigEndian(id.low, to: &bytes)
        }
        postgresValue = PostgresValue(type: .uuidArray, bytes: bytes)
    }

    public init(_ numbers: some Collection<Int64>) {
        var bytes = Self.header(elementType: .int8, count: numbers.count, bodySize: numbers.count * 12)
        for number in numbers {
            appendBigEndian(Int32(8), to: &bytes)
            appendBigEndian(number, to: &bytes)
        }
        postgresValue = PostgresValue(type: .int8Array, bytes: bytes)
    }

    public init(_ numbers: some Collection<Int32>) {
        var bytes = Self.header(elementType: .int4, count: numbers.count, bodySize: numbers.count * 8)
        for number in numbers {
            appendBigEndian(Int32(4), to: &bytes)
            appendBigEndian(number, to: &bytes)
        }
        postgresValue = PostgresValue(type: .int4Array, bytes: bytes)
    }

    public init(_ texts: some Collection<String>) {
        let bodySize = texts.reduce(0) { $0 + 4 + $1.utf8.count }
        var bytes = Self.header(elementType: .text, count: texts.count, bodySize: bodySize)
        for text in texts {
            appendBigEndian(Int32(text.utf8.count), to: &bytes)
            bytes.append(contentsOf: text.utf8)
        }
        postgresValue = PostgresValue(type: .textArray, bytes: bytes)
    }

    /// A buffer with room for `bodySize` bytes of elements, holding the array's header.
    private static func header(elementType: PostgresType, count: Int, bodySize: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + bodySize)
        PostgresArrayCoding.appendHeader(elementType: elementType, count: count, hasNulls: false, to: &bytes)
        return bytes
    }
}
