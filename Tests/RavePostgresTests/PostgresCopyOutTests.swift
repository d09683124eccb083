import Foundation
import Testing

@testable import RavePostgres

@Suite struct PostgresCopyOutTests {
    /// The error thrown by a test's own consumer.
    struct ConsumerStopped: Error {}

    // MARK: - Against the server

    @Test func copyOutReturnsEveryRowAndTypeWithNullsInChunks() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript(
                """
                CREATE TABLE entries (id int8 PRIMARY KEY, board int4 NOT NULL, player uuid, score int8, small int2,
                                      flag bool, ratio float8, at timestamptz, note text, blob bytea);
                INSERT INTO entries
                SELECT i, i % 3, CASE WHEN i % 7 = 0 THEN NULL ELSE gen_random_uuid() END,
                       CASE WHEN i % 11 = 0 THEN NULL ELSE i * 1000 - 7 END, (i % 100)::int2, i % 2 = 0,
                       i / 8.0, timestamptz '2026-01-01 00:00:00.000001+00' + i * interval '1 microsecond',
                       CASE WHEN i % 5 = 0 THEN NULL ELSE 'note ' || i END, decode(lpad(to_hex(i), 8, '0'), 'hex')
                FROM generate_series(1, 30000) AS i
                """)
            let board = Int32(1)
            let expected = try await connection.query(
                """
                SELECT id, player, score, small, flag, ratio, at, note, blob FROM entries WHERE board = $1 ORDER BY id
                """, [board])
            var chunks = 0
            var index = 0
            let copied = try await connection.copyOut(
                """
                SELECT id, player, score, small, flag, ratio, at, note, blob FROM entries WHERE board = \(board)
                ORDER BY id
                """, chunkBytes: 4096
            ) { rows in
                chunks += 1
                // A slow reader for a while: the loop stops reading when four chunks wait, and goes on after.
                if chunks < 20 { try await Task.sleep(for: .milliseconds(2)) }
                #expect(rows.fieldCount == 9)
                for row in 0..<rows.count {
                    let want = expected[index]
                    #expect(try rows.int64(row: row, field: 0) == want.decode(Int64.self, at: 0))
                    #expect(
                        try rows.decode(RaveID?.self, row: row, field: 1, type: .uuid)
                            == want.decode(RaveID?.self, at: 1))
                    #expect(rows.isNull(row: row, field: 1) == want.isNull(at: 1))
                    if !want.isNull(at: 1) {
                        #expect(try rows.raveID(row: row, field: 1) == want.decode(RaveID.self, at: 1))
                    }
                    #expect(
                        try rows.decode(Int64?.self, row: row, field: 2, type: .int8) == want.decode(Int64?.self, at: 2)
                    )
                    #expect(try rows.int16(row: row, field: 3) == Int16(want.decode(Int64.self, at: 3)))
                    #expect(try rows.bool(row: row, field: 4) == want.decode(Bool.self, at: 4))
                    #expect(try rows.double(row: row, field: 5) == want.decode(Double.self, at: 5))
                    #expect(try rows.timestamp(row: row, field: 6) == want.decode(PostgresTimestamp.self, at: 6))
                    #expect(
                        try rows.postgresMicroseconds(row: row, field: 6) + PostgresTimestamp.postgresEpochOffset
                            == want.decode(PostgresTimestamp.self, at: 6).microsecondsSinceEpoch)
                    #expect(
                        try rows.decode(String?.self, row: row, field: 7, type: .text)
                            == want.decode(String?.self, at: 7))
                    #expect(
                        try rows.decode([UInt8].self, row: row, field: 8, type: .bytea)
                            == want.decode([UInt8].self, at: 8))
                    index += 1
                }
            }
            #expect(copied == 10_000)
            #expect(index == 10_000)
            #expect(chunks > 20)
            // The connection is idle and usable.
            let after = try await connection.query("SELECT count(*) AS n FROM entries")
            #expect(try after.first?.decode(Int64.self, column: "n") == 30_000)
        }
    }

    @Test func copyOutReadsInt4AndRejectsAccessAsAnotherWidth() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            var values: [Int32] = []
            try await connection.copyOut("SELECT i::int4, NULL::int8 FROM generate_series(-2, 2) AS i") { rows in
                for row in 0..<rows.count {
                    values.append(try rows.int32(row: row, field: 0))
                    #expect(throws: PostgresError.self) { try rows.int64(row: row, field: 0) }
                    #expect(throws: PostgresError.self) { try rows.int64(row: row, field: 1) }
                    #expect(throws: PostgresError.self) { try rows.raveID(row: row, field: 0) }
                }
            }
            #expect(values == [-2, -1, 0, 1, 2])
        }
    }

    @Test func copyOutOfAnEmptyResultCallsNobody() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            var called = false
            let copied = try await connection.copyOut("SELECT 1::int8 AS one WHERE \(false)") { _ in called = true }
            #expect(copied == 0)
            #expect(!called)
            #expect(try await connection.query("SELECT 2 AS two").first?.decode(Int64.self, column: "two") == 2)
        }
    }

    @Test func interpolatedValuesArriveAsTheirOwnLiterals() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let text = #"it's a \ test'); DROP TABLE x; --"#
            let id = RaveID.random()
            let time = PostgresTimestamp(microsecondsSinceEpoch: 1_700_000_000_123_457)
            var seen: [(String, RaveID, Int64, Int64, PostgresTimestamp, Bool)] = []
            try await connection.copyOut(
                "SELECT \(text), \(id), \(Int64.min), -\(Int32(-5))::int8, \(time), \(true) AND NOT \(false)"
            ) { rows in
                for row in 0..<rows.count {
                    seen.append(
                        (
                            try rows.string(row: row, field: 0), try rows.raveID(row: row, field: 1),
                            try rows.int64(row: row, field: 2), try rows.int64(row: row, field: 3),
                            try rows.timestamp(row: row, field: 4), try rows.bool(row: row, field: 5)
                        ))
                }
            }
            #expect(seen.count == 1)
            #expect(seen.first?.0 == text)
            #expect(seen.first?.1 == id)
            #expect(seen.first?.2 == Int64.min)
            #expect(seen.first?.3 == 5)
            #expect(seen.first?.4 == time)
            #expect(seen.first?.5 == true)
            await #expect(throws: PostgresError.self) {
                try await connection.copyOut("SELECT \("a\u{0}b")") { _ in }
            }
        }
    }

    @Test func aCopyOutSentAsAQueryFailsInsteadOfHanging() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let error = await #expect(throws: PostgresError.self) {
                try await connection.query(PostgresQuery("COPY (SELECT 1) TO STDOUT"), timeout: .seconds(10))
            }
            #expect(error?.code == .client)
        }
    }

    @Test func aServerErrorMidCopyIsThrownAndTheConnectionStaysUsable() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            var received = 0
            let error = await #expect(throws: PostgresError.self) {
                try await connection.copyOut(
                    "SELECT i, 1 / (i - 40000) FROM generate_series(1, 50000) AS i", chunkBytes: 4096
                ) { rows in received += rows.count }
            }
            #expect(error?.code == .server)
            #expect(error?.sqlState == "22012")
            #expect(received < 40_000)
            #expect(!connection.isClosed)
            #expect(try await connection.query("SELECT 3 AS three").first?.decode(Int64.self, column: "three") == 3)
            // And a copy after it.
            let copied = try await connection.copyOut("SELECT i FROM generate_series(1, 10) AS i") { _ in }
            #expect(copied == 10)
        }
    }

    @Test func aReaderThatThrowsCancelsTheCopyAndKeepsTheConnection() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let started = ContinuousClock.now
            await #expect(throws: ConsumerStopped.self) {
                // Far more than is read before the cancel: a reader that threw must not wait for all of it.
                try await connection.copyOut(
                    "SELECT i, repeat('x', 200) FROM (SELECT generate_series(1, 50000000) AS i) AS s", chunkBytes: 65536
                ) { _ in throw ConsumerStopped() }
            }
            #expect(ContinuousClock.now - started < .seconds(20))
            #expect(!connection.isClosed)
            #expect(try await connection.query("SELECT 4 AS four").first?.decode(Int64.self, column: "four") == 4)
        }
    }

    @Test func aLostConnectionMidCopyFailsItAndTheConnectionCloses() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            let killer = try await database.connect()
            defer {
                connection.close()
                killer.close()
            }
            let pid = try #require(
                try await connection.query("SELECT pg_backend_pid() AS pid").first?.decode(Int32.self, column: "pid"))
            var chunks = 0
            await #expect(throws: PostgresError.self) {
                try await connection.copyOut(
                    "SELECT i, repeat('x', 200) FROM (SELECT generate_series(1, 50000000) AS i) AS s", timeout: nil,
                    chunkBytes: 65536
                ) { _ in
                    chunks += 1
                    if chunks == 1 { try await killer.query("SELECT pg_terminate_backend($1)", [pid]) }
                }
            }
            // The server said why before closing (57P01), or the socket closed first; either way the connection
            // is gone, and the pool would drop it.
            await #expect(throws: PostgresError.self) { try await connection.query("SELECT 1") }
            #expect(connection.isClosed)
        }
    }

    @Test func aCancelledTaskCancelsTheCopy() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let task = Task {
                try await connection.copyOut(
                    "SELECT generate_series(1, 50000000) AS i", timeout: nil, chunkBytes: 65536
                ) { _ in try await Task.sleep(for: .milliseconds(1)) }
            }
            try await Task.sleep(for: .milliseconds(200))
            task.cancel()
            await #expect(throws: (any Error).self) { try await task.value }
            #expect(try await connection.query("SELECT 5 AS five").first?.decode(Int64.self, column: "five") == 5)
        }
    }

    // MARK: - The format, without a server

    /// A binary COPY stream as the server writes it, built by the writer that feeds `COPY … FROM STDIN`.
    static func sampleStream() -> (bytes: [UInt8], rows: [(RaveID, Int64?, String?)]) {
        var writer = PostgresCopyWriter()
        var rows: [(RaveID, Int64?, String?)] = []
        for index in 0..<40 {
            let row = (RaveID.random(), index % 3 == 0 ? nil : Int64(index) - 20, index % 4 == 0 ? nil : "row \(index)")
            rows.append(row)
            writer.appendRow(row.0, row.1, row.2)
        }
        return (writer.finish().flatMap { $0 }, rows)
    }

    static func read(_ pieces: [[UInt8]]) throws -> [(RaveID, Int64?, String?)] {
        var parser = PostgresCopyOutParser()
        var rows: [(RaveID, Int64?, String?)] = []
        for piece in pieces {
            let chunk = try parser.parse(piece)
            for row in 0..<chunk.count {
                rows.append(
                    (
                        try chunk.raveID(row: row, field: 0),
                        try chunk.decode(Int64?.self, row: row, field: 1, type: .int8),
                        try chunk.decode(String?.self, row: row, field: 2, type: .text)
                    ))
            }
        }
        try parser.finish()
        return rows
    }

    @Test func theParserReadsAStreamCutAnywhere() throws {
        let (bytes, expected) = Self.sampleStream()
        for cut in 0...bytes.count {
            let rows = try Self.read([Array(bytes[..<cut]), Array(bytes[cut...])])
            #expect(rows.map(\.0) == expected.map(\.0))
            #expect(rows.map(\.1) == expected.map(\.1))
            #expect(rows.map(\.2) == expected.map(\.2))
        }
        // One byte at a time.
        let rows = try Self.read(bytes.map { [$0] })
        #expect(rows.map(\.0) == expected.map(\.0))
    }

    @Test func theParserRejectsEveryTruncation() {
        let (bytes, _) = Self.sampleStream()
        for length in 0..<bytes.count {
            #expect(throws: PostgresError.self, "truncated to \(length) bytes") {
                _ = try Self.read([Array(bytes[..<length])])
            }
        }
    }

    @Test func theParserRejectsMalformedStreams() throws {
        let (bytes, _) = Self.sampleStream()
        func expectMalformed(_ stream: [UInt8], _ comment: Comment) {
            let error = #expect(throws: PostgresError.self, comment) { _ = try Self.read([stream]) }
            #expect(error?.code == .malformedData, comment)
        }
        var badSignature = bytes
        badSignature[0] = UInt8(ascii: "X")
        expectMalformed(badSignature, "signature")
        var withOIDs = bytes
        withOIDs[12] = 1  // flags bit 16
        expectMalformed(withOIDs, "OID flag")
        var hugeExtension = bytes
        hugeExtension[15] = 0xff  // header extension length -1…
        expectMalformed(hugeExtension, "negative extension length")
        var negativeLength = bytes
        // The first tuple: field count at 19, the uuid's length word at 21.
        negativeLength.replaceSubrange(21..<25, with: [0xff, 0xff, 0xff, 0xfe])
        expectMalformed(negativeLength, "length -2")
        var otherFieldCount = bytes
        otherFieldCount[20] = 4
        expectMalformed(otherFieldCount, "field count of the first tuple changed from 3 to 4")
        var negativeFieldCount = bytes
        negativeFieldCount.replaceSubrange(19..<21, with: [0xff, 0xfe])
        expectMalformed(negativeFieldCount, "field count -2")
        expectMalformed(bytes + [0], "data after the trailer")
        // A second tuple with another field count than the first.
        var writer = PostgresCopyWriter()
        writer.appendRow(Int64(1), Int64(2))
        writer.appendRow(Int64(3))
        expectMalformed(writer.finish().flatMap { $0 }, "field counts differ")
        // Random corruption never crashes: it throws or reads something.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var corrupted = bytes
            for _ in 0..<3 { corrupted[Int.random(in: 0..<corrupted.count, using: &generator)] = .random(in: 0...255) }
            let cut = Int.random(in: 0...corrupted.count, using: &generator)
            _ = try? Self.read([Array(corrupted[..<cut]), Array(corrupted[cut...])])
        }
    }

    @Test func theParserAcceptsAHeaderExtensionAndZeroRows() throws {
        let header = PostgresCopyOutParser.signature + [0, 0, 0, 0] + [0, 0, 0, 3] + [9, 9, 9]
        #expect(try Self.read([header + [0xff, 0xff]]).isEmpty)
        #expect(throws: PostgresError.self) { try PostgresCopyOutParser().finish() }
    }
}
