import Testing

@testable import RavePostgres

/// Arrays are written in one pass into PostgreSQL's binary array format: checked against the format's bytes, and
/// against a real server for columns taken from lazy collections and for NULL elements.
@Suite struct PostgresArrayParameterTests {
    /// Big-endian Int32s, as the array header is made of.
    private func int32s(_ values: Int32...) -> [UInt8] {
        values.flatMap { value in withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    }

    @Test func numbersAreWrittenInTheBinaryArrayFormat() {
        let header = int32s(1, 0, 20, 2, 1)  // one dimension, no NULLs, int8, two elements, lower bound 1
        let elements = int32s(8, 0, 7) + int32s(8, -1, -1)  // length 8, then 7 and -1 as big-endian Int64s
        #expect([Int64(7), -1].postgresValue == PostgresValue(type: .int8Array, bytes: header + elements))
        #expect(
            PostgresArrayParameter([Int32(5)]).postgresValue
                == PostgresValue(type: .int4Array, bytes: int32s(1, 0, 23, 1, 1, 4, 5)))
        #expect([Int64]().postgresValue == PostgresValue(type: .int8Array, bytes: int32s(0, 0, 20)))
    }

    @Test func textsAndIDsAreWrittenInTheBinaryArrayFormat() {
        let text = PostgresArrayParameter(["ab", ""]).postgresValue
        #expect(
            text == PostgresValue(type: .textArray, bytes: int32s(1, 0, 25, 2, 1, 2) + Array("ab".utf8) + int32s(0)))
        let id = RaveID(high: 0x0102_0304_0506_0708, low: 0x090a_0b0c_0d0e_0f10)
        #expect(
            PostgresArrayParameter(CollectionOfOne(id)).postgresValue
                == PostgresValue(type: .uuidArray, bytes: int32s(1, 0, 2950, 1, 1, 16) + Array(1...16)))
    }

    /// Plain arrays of the common element types take specialized loops (`Array.postgresValue`); passed as query
    /// parameters (existentials) they must write exactly what the generic encoder writes.
    @Test func plainArraysOfEachCommonTypeWriteWhatTheGenericEncoderWrites() {
        let id = RaveID(high: 0x0102_0304_0506_0708, low: 0x090a_0b0c_0d0e_0f10)
        let columns: [(plain: any PostgresEncodable, generic: PostgresValue?)] = [
            (["ab", "", "ü"], PostgresArrayParameter(["ab", "", "ü"]).postgresValue),
            ([Int64.min, 0, 7], PostgresArrayParameter([Int64.min, 0, 7]).postgresValue),
            ([Int32(-5), 9], PostgresArrayParameter([Int32(-5), 9]).postgresValue),
            ([Int.max, -1], PostgresArrayParameter([Int.max, -1]).postgresValue),
            ([id, RaveID(high: 0, low: 1)], PostgresArrayParameter([id, RaveID(high: 0, low: 1)]).postgresValue),
            ([String](), PostgresArrayParameter([String]()).postgresValue),
            ([[UInt8]([1, 2]), []], PostgresArrayParameter([[UInt8]([1, 2]), []]).postgresValue),
        ]
        for column in columns {
            #expect(column.plain.postgresValue == column.generic, "\(type(of: column.plain))")
        }
        #expect(([Int(3)] as any PostgresEncodable).postgresValue?.type == .int8Array)
    }

    @Test func byteStringsAreWrittenAsAByteaArray() {
        let value = [[UInt8]([0xff, 0]), []].postgresValue
        #expect(value == PostgresValue(type: .byteaArray, bytes: int32s(1, 0, 17, 2, 1, 2) + [0xff, 0] + int32s(0)))
        // A lone [UInt8] stays a bytea.
        #expect([UInt8]([7]).postgresValue == PostgresValue(type: .bytea, bytes: [7]))
    }

    @Test func aNullElementSetsTheHeadersNullFlag() {
        let value = PostgresArrayParameter([Tagged(number: 3), Tagged(number: nil)]).postgresValue
        #expect(value == PostgresValue(type: .int8Array, bytes: int32s(1, 1, 20, 2, 1, 8, 0, 3, -1)))
    }

    @Test func lazyColumnsAndNullsRoundTripThroughTheServer() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let rows: [(id: RaveID, name: String, score: Int64)] = [
                (RaveID.random(), "ünïcode ✓", Int64.min), (RaveID.random(), "", 42),
            ]
            let result = try await connection.query(
                """
                SELECT $1::uuid[] AS ids, $2::text[] AS names, $3::int8[] AS scores, $4::int8[] AS tagged,
                    $5::bytea[] AS blobs, (SELECT array_agg(length(b) ORDER BY n) FROM unnest($5::bytea[])
                        WITH ORDINALITY AS t(b, n)) AS lengths
                """,
                [
                    PostgresArrayParameter(rows.lazy.map(\.id)), PostgresArrayParameter(rows.lazy.map(\.name)),
                    PostgresArrayParameter(rows.lazy.map(\.score)),
                    PostgresArrayParameter([Tagged(number: nil), Tagged(number: 9)]),
                    [[UInt8](0...255), [], [0]],
                ])
            let row = try #require(result.first)
            #expect(try row.decode([RaveID].self, column: "ids") == rows.map(\.id))
            #expect(try row.decode([String].self, column: "names") == rows.map(\.name))
            #expect(try row.decode([Int64].self, column: "scores") == rows.map(\.score))
            #expect(try row.decode([Tagged].self, column: "tagged") == [Tagged(number: nil), Tagged(number: 9)])
            #expect(try row.decode([[UInt8]].self, column: "blobs") == [[UInt8](0...255), [], [0]])
            #expect(try row.decode([Int32].self, column: "lengths") == [256, 0, 1])
        }
    }
}

/// An element without its own array writer (so it takes the default, through `postgresValue`) that can be NULL.
private struct Tagged: PostgresArrayElement, Equatable {
    static var postgresElementType: PostgresType { .int8 }

    let number: Int64?

    var postgresValue: PostgresValue? { number?.postgresValue }

    init(number: Int64?) { self.number = number }

    init(postgresCell cell: PostgresCell) throws { number = try Int64(postgresCell: cell) }

    static func decodeNull(column: String) throws -> Tagged { Tagged(number: nil) }
}
