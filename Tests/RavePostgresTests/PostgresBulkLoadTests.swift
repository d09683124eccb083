import Foundation
import Testing

@testable import RavePostgres

@Suite struct PostgresBulkLoadTests {
    // MARK: - Binary COPY

    @Test func copyWriterLaysOutPostgresBinaryFormat() {
        var writer = PostgresCopyWriter()
        writer.appendRow(Int32(7), nil as String?, "ab")
        let chunks = writer.finish()
        let expected: [UInt8] =
            Array("PGCOPY\n".utf8) + [0xff, 0x0d, 0x0a, 0x00] + [0, 0, 0, 0, 0, 0, 0, 0]  // signature, flags, extension
            + [0, 3]  // three fields
            + [0, 0, 0, 4, 0, 0, 0, 7]  // int4 7
            + [0xff, 0xff, 0xff, 0xff]  // NULL
            + [0, 0, 0, 2, UInt8(ascii: "a"), UInt8(ascii: "b")]  // text "ab"
            + [0xff, 0xff]  // trailer
        #expect(chunks == [expected])
        #expect(writer.rowCount == 1)
    }

    @Test func copyWriterCutsLargeLoadsIntoChunks() {
        var writer = PostgresCopyWriter(chunkSize: 4096)
        for index in 0..<10_000 { writer.appendRow(Int64(index), RaveID.random()) }
        let chunks = writer.finish()
        #expect(chunks.count > 10)
        #expect(chunks.dropLast().allSatisfy { $0.count >= 4096 && $0.count < 4096 + 64 })
        // 19-byte header, per row 2 + (4 + 8) + (4 + 16) bytes, 2-byte trailer.
        #expect(chunks.reduce(0) { $0 + $1.count } == 19 + 10_000 * 34 + 2)
    }

    @Test func binaryCopyLoadsEveryColumnTypeIncludingNull() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript(
                """
                CREATE TABLE loaded (id uuid NOT NULL, points int8, at timestamptz, note text, flag bool,
                                     ratio float8, small int4, tiny int2, blob bytea, doc jsonb)
                """)
            let first = RaveID.random()
            let time = PostgresTimestamp(microsecondsSinceEpoch: 1_700_000_000_123_456)
            let copied = try await connection.copyFrom(
                table: "loaded",
                columns: ["id", "points", "at", "note", "flag", "ratio", "small", "tiny", "blob", "doc"]
            ) { writer in
                writer.appendRow(
                    first, Int64(-5), time, "tab\there\\ née", true, 2.5, Int32(-7), Int16(3), [UInt8]([0, 255]),
                    PostgresJSON(#"{"a": 1}"#))
                for index in 1..<5_000 {
                    writer.appendRow(
                        RaveID.random(), Int64(index), nil as PostgresTimestamp?, nil as String?, false, 0.0, Int32(0),
                        Int16(0), nil as [UInt8]?, nil as PostgresJSON?)
                }
            }
            #expect(copied == 5_000)
            let rows = try await connection.query("SELECT * FROM loaded WHERE id = $1", [first])
            let row = try #require(rows.first)
            #expect(try row.decode(Int64.self, column: "points") == -5)
            #expect(try row.decode(PostgresTimestamp.self, column: "at") == time)
            #expect(try row.decode(String.self, column: "note") == "tab\there\\ née")
            #expect(try row.decode(Bool.self, column: "flag"))
            #expect(try row.decode(Double.self, column: "ratio") == 2.5)
            #expect(try row.decode(Int32.self, column: "small") == -7)
            #expect(try row.decode(Int64.self, column: "tiny") == 3)
            #expect(try row.decode([UInt8].self, column: "blob") == [0, 255])
            #expect(try row.decode(PostgresJSON.self, column: "doc").text.contains("\"a\""))
            let summary = try await connection.query(
                "SELECT count(*) AS n, sum(points)::int8 AS total, count(at) AS timed, count(note) AS noted FROM loaded"
            )
            let totals = try #require(summary.first)
            #expect(try totals.decode(Int64.self, column: "total") == 4_999 * 5_000 / 2 - 5)
            #expect(try totals.decode(Int64.self, column: "timed") == 1)
            #expect(try totals.decode(Int64.self, column: "noted") == 1)
        }
    }

    @Test func binaryCopyOfTypedTuplesLoadsTheSequence() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript("CREATE TABLE scores (player int8 PRIMARY KEY, points int4)")
            let rows = (0..<50_000).lazy.map { (Int64($0), Int32($0 % 1_000)) }
            let copied = try await connection.copyFrom(table: "scores", columns: ["player", "points"], rows: rows)
            #expect(copied == 50_000)
            let count = try await connection.query("SELECT count(*) AS n, max(player) AS top FROM scores")
            #expect(try count.first?.decode(Int64.self, column: "n") == 50_000)
            #expect(try count.first?.decode(Int64.self, column: "top") == 49_999)
        }
    }

    @Test func binaryCopyWithAMismatchedTypeFailsAndLeavesTheConnectionUsable() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript("CREATE TABLE scores (player int8)")
            await #expect(throws: PostgresError.self) {
                // int4 bytes for an int8 column: the server checks the binary length.
                try await connection.copyFrom(table: "scores", columns: ["player"]) { $0.appendRow(Int32(1)) }
            }
            let rows = try await connection.query("SELECT count(*) AS n FROM scores")
            #expect(try rows.first?.decode(Int64.self, column: "n") == 0)
        }
    }

    // MARK: - Batched executions

    @Test func executeManyInsertsEveryRowInBatches() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript("CREATE TABLE events (id int8 PRIMARY KEY, note text, at timestamptz)")
            let insert = PostgresStatement(
                name: "insert_event", sql: "INSERT INTO events (id, note, at) VALUES ($1, $2, $3)")
            let time = PostgresTimestamp(microsecondsSinceEpoch: 1_700_000_000_000_001)
            let rows = (0..<5_500).lazy.map { index in
                (Int64(index), index % 2 == 0 ? "note \(index)" : nil, time)
            }
            let inserted = try await connection.executeMany(insert, rows: rows, batchSize: 1_000)
            #expect(inserted == 5_500)
            let summary = try await connection.query(
                "SELECT count(*) AS n, count(note) AS noted, sum(id)::int8 AS total, min(at) AS at FROM events")
            let row = try #require(summary.first)
            #expect(try row.decode(Int64.self, column: "n") == 5_500)
            #expect(try row.decode(Int64.self, column: "noted") == 2_750)
            #expect(try row.decode(Int64.self, column: "total") == 5_499 * 5_500 / 2)
            #expect(try row.decode(PostgresTimestamp.self, column: "at") == time)
            // The statement stays prepared and the connection leaves pipeline mode: a second call and a plain
            // query work.
            let again = try await connection.executeMany(insert, rows: [(Int64(-1), "last", time)])
            #expect(again == 1)
            _ = try await connection.execute(insert, [-2, "single", time])
        }
    }

    @Test func executeManyStopsAtTheFailingBatchAndRollsItBack() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript("CREATE TABLE events (id int8 PRIMARY KEY)")
            let insert = PostgresStatement(name: "insert_event_id", sql: "INSERT INTO events (id) VALUES ($1)")
            // Row 2,500 repeats id 0: the third batch of 1,000 violates the primary key.
            let rows = (0..<10_000).lazy.map { index in Int64(index == 2_500 ? 0 : index) }
            let error = await #expect(throws: PostgresError.self) {
                try await connection.executeMany(insert, rows: rows, batchSize: 1_000)
            }
            #expect(error?.sqlState == "23505")
            let count = try await connection.query(
                "SELECT count(*) AS n, count(*) FILTER (WHERE id BETWEEN 2000 AND 2999) AS failed FROM events")
            let row = try #require(count.first)
            let committed = try row.decode(Int64.self, column: "n")
            // The two batches before it committed, the failing one did not, and at most the batches already in
            // flight after it did; nothing was sent after the error arrived.
            #expect(try row.decode(Int64.self, column: "failed") == 0)
            #expect(committed >= 2_000 && committed <= 2_000 + 3 * 1_000 && committed % 1_000 == 0)
            #expect(error?.message.contains("\(committed) rows of other batches were committed") == true)
            let single: [Int64] = [-1]
            let after = try await connection.executeMany(insert, rows: single)
            #expect(after == 1)
        }
    }
}
