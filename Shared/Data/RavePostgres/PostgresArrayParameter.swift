/// A column of a batched statement as one array parameter, taken from any collection.
///
/// Batched statements send columns of hundreds of elements as `unnest($1::bigint[], …)` parameters. An `[Element]`
/// parameter needs the column as an array first; this takes a lazy view (`writes.lazy.map(\.score)`) or any other
/// collection and writes its elements straight into PostgreSQL's binary array format, in one buffer, the same bytes
/// an `[Element]` sends.
public struct PostgresArrayParameter: PostgresEncodable {
    public let postgresValue: PostgresValue?

    @inlinable
    public init<Elements: Collection>(_ elements: Elements) where Elements.Element: PostgresArrayElement {
        postgresValue = PostgresArrayCoding.encode(elements)
    }
}
