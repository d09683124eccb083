import Foundation
import RavePostgres
import Testing

/// Every Swift type the services bind as a parameter, against the PostgreSQL type its statements give it, read
/// back from a real server.
///
/// Named statements are prepared with the types of their first execution's values, and a NULL has no type, so
/// the server infers one from the SQL: a value bound later must then be that type's binary form. Each case runs
/// its statement first with NULL, then with the value (the order that made a `date` parameter fail with 22P03
/// when it was sent as text), and once more prepared with the value first.
@Suite struct PostgresTypeBindingTests {
    /// One binding: the SQL type (a column type or a cast the stores use), a value, and how to read it back.
    struct Binding: CustomTestStringConvertible, Sendable {
        let sqlType: String
        let value: any PostgresEncodable & Sendable
        let readsBack: @Sendable (PostgresRow) throws -> Bool

        var testDescription: String { "\(type(of: value)) as \(sqlType)" }

        init<Value: PostgresEncodable & PostgresDecodable & Equatable & Sendable>(_ sqlType: String, _ value: Value) {
            self.sqlType = sqlType
            self.value = value
            readsBack = { row in try row.decode(Value.self, column: "value") == value }
        }
    }

    static let id = RaveID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)

    static let bindings: [Binding] = [
        Binding("uuid", id),
        Binding("text", "héllo\tworld ✓"),
        Binding("varchar(64)", "name"),
        Binding("int8", Int64.min),
        Binding("bigint", 42),
        Binding("int4", Int32(-7)),
        Binding("int", Int32.max),
        Binding("int2", UInt8(200)),
        Binding("bool", true),
        Binding("float8", -2.5e-300),
        Binding("bytea", [UInt8]([0, 1, 255, 0])),
        Binding("timestamptz", PostgresTimestamp(microsecondsSinceEpoch: 1_700_000_000_123_456)),
        Binding("timestamptz", PostgresTimestamp(microsecondsSinceEpoch: -86_400_000_001)),
        Binding("jsonb", PostgresJSON(#"{"a": [1, "b"]}"#)),
        Binding("date", PostgresDate(year: 2000, month: 1, day: 15)!),
        Binding("date", PostgresDate(year: 1900, month: 2, day: 28)!),
        Binding("date", PostgresDate(year: 2024, month: 2, day: 29)!),
        Binding("date", PostgresDate(year: 1999, month: 12, day: 31)!),
        Binding("text[]", ["x", "", "y z"]),
        Binding("int8[]", [Int64(1), -2, .max]),
        Binding("int4[]", [Int32(3), -4]),
        Binding("uuid[]", [id, RaveID(high: 1, low: 2)]),
    ]

    @Test(arguments: bindings)
    func valueBoundAfterANullReadsBackThroughAColumn(_ binding: Binding) async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript("CREATE TABLE bound (n int PRIMARY KEY, value \(binding.sqlType))")
            let insert = PostgresStatement(name: "bound_insert", sql: "INSERT INTO bound (n, value) VALUES ($1, $2)")
            try await connection.execute(insert, [Int32(1), nil as String?])
            try await connection.execute(insert, [Int32(2), binding.value])
            let rows = try await connection.query("SELECT value FROM bound WHERE n = 2")
            #expect(try binding.readsBack(try #require(rows.first)))
            let null = try await connection.query("SELECT value IS NULL AS missing FROM bound WHERE n = 1")
            #expect(try null.first?.decode(Bool.self, column: "missing") == true)
        }
    }

    @Test(arguments: bindings)
    func valueBoundAfterANullReadsBackThroughACast(_ binding: Binding) async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let nullFirst = PostgresStatement(
                name: "cast_null_first", sql: "SELECT CASE WHEN $1 THEN $2::\(binding.sqlType) END AS value")
            let valueFirst = PostgresStatement(
                name: "cast_value_first", sql: "SELECT CASE WHEN $1 THEN $2::\(binding.sqlType) END AS value")
            _ = try await connection.execute(nullFirst, [false, nil as String?])
            let afterNull = try await connection.execute(nullFirst, [true, binding.value])
            #expect(try binding.readsBack(try #require(afterNull.first)))
            let first = try await connection.execute(valueFirst, [true, binding.value])
            #expect(try binding.readsBack(try #require(first.first)))
            let thenNull = try await connection.execute(valueFirst, [false, nil as String?])
            #expect(try thenNull.first?.decode(String?.self, column: "value") == nil)
        }
    }

    @Test func datesMatchTheServersCalendar() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let dates = [
                PostgresDate(year: 1, month: 1, day: 1)!, PostgresDate(year: 1582, month: 10, day: 4)!,
                PostgresDate(year: 1970, month: 1, day: 1)!, PostgresDate(year: 2000, month: 3, day: 1)!,
                PostgresDate(year: 2100, month: 2, day: 28)!, PostgresDate(year: 9999, month: 12, day: 31)!,
            ]
            let rows = try await connection.query(
                "SELECT d, d::text AS iso FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n), LATERAL (SELECT t::date AS d) AS x ORDER BY n",
                [dates.map(\.iso)])
            #expect(try rows.map { try $0.decode(PostgresDate.self, column: "d") } == dates)
            #expect(try rows.map { try $0.decode(String.self, column: "iso") } == dates.map(\.iso))
        }
    }

    /// A time a client sends (a filter bound of year 292,000,000) is past what `timestamptz` holds: it is bound as
    /// infinity, never a crash converting it, and infinity reads back as the extreme it stands for.
    @Test func timesBeyondPostgreSQLsRangeAreInfinity() async throws {
        let far = Date(timeIntervalSince1970: 9_223_372_036_854_775.806)
        let before = Date(timeIntervalSince1970: -9_223_372_036_854_775.806)
        #expect(PostgresTimestamp(far) == .infinity)
        #expect(PostgresTimestamp(before) == .minusInfinity)
        #expect(PostgresTimestamp(Date(timeIntervalSince1970: .infinity)) == .infinity)
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let rows = try await connection.query(
                "SELECT $1::timestamptz = 'infinity' AS late, $2::timestamptz = '-infinity' AS early, "
                    + "'infinity'::timestamptz AS up, '-infinity'::timestamptz AS down, "
                    + "'200000-01-01 00:00:00+00'::timestamptz AS far",
                [far, before])
            let row = try #require(rows.first)
            #expect(try row.decode(Bool.self, column: "late"))
            #expect(try row.decode(Bool.self, column: "early"))
            #expect(try row.decode(PostgresTimestamp.self, column: "up") == .infinity)
            #expect(try row.decode(PostgresTimestamp.self, column: "down") == .minusInfinity)
            // 200000-01-01: 72,328,972 days after 1970-01-01.
            #expect(
                try row.decode(PostgresTimestamp.self, column: "far")
                    == PostgresTimestamp(microsecondsSinceEpoch: 72_328_972 * 86_400_000_000))
        }
    }

    @Test func dateTextIsStrict() {
        #expect(
            PostgresDate(iso: "2000-01-15").map { [$0.parts.year, $0.parts.month, $0.parts.day] } == [2000, 1, 15])
        #expect(PostgresDate(iso: "2000-01-15")?.daysSince2000 == 14)
        #expect(PostgresDate(iso: "1999-12-31")?.daysSince2000 == -1)
        for text in [
            "2000-13-01", "2000-00-10", "2000-02-30", "2001-02-29", "1900-02-29", "2000-1-15", "2000-01-15T00:00",
            "20000-01-15", "+200-01-15", "2000/01/15", "", "0000-01-01", "２０００-01-15",
        ] {
            #expect(PostgresDate(iso: text) == nil, "\(text) parsed")
        }
        #expect(PostgresDate(iso: "2000-02-29") != nil)
        #expect(PostgresDate(Date(timeIntervalSince1970: 946_684_800 + 86_399)).iso == "2000-01-01")
        #expect(PostgresDate(Date(timeIntervalSince1970: -1)).iso == "1969-12-31")
    }
}
