import RavePostgres
import RaveTestSupport
import Testing

@Suite struct PostgresConnectionTests {
    @Test func everyTypeRoundTripsIncludingNull() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let id = RaveID.random()
            let time = PostgresTimestamp(microsecondsSinceEpoch: 1_700_000_000_123_456)
            let rows = try await connection.query(
                """
                SELECT $1::text AS name, $2::int4 AS small, $3::int8 AS big, $4::int8 AS plain, $5::bool AS flag,
                       $6::uuid AS id, $7::timestamptz AS at, $8::bytea AS blob, $9::jsonb AS doc,
                       $10::text[] AS names, $11::int8[] AS numbers, $12::uuid[] AS ids, $13::text AS missing
                """,
                [
                    "héllo\tworld", Int32(-7), Int64.max, 42, true, id, time, [UInt8]([0, 1, 255]),
                    PostgresJSON(#"{"a": 1}"#), ["x", "y z"], [Int64(1), -2], [id], nil as String?,
                ])
            let row = try #require(rows.first)
            #expect(try row.decode(String.self, column: "name") == "héllo\tworld")
            #expect(try row.decode(Int32.self, column: "small") == -7)
            #expect(try row.decode(Int64.self, column: "big") == Int64.max)
            #expect(try row.decode(Int.self, column: "plain") == 42)
            #expect(try row.decode(Bool.self, column: "flag"))
            #expect(try row.decode(RaveID.self, column: "id") == id)
            #expect(try row.decode(PostgresTimestamp.self, column: "at") == time)
            #expect(try row.decode([UInt8].self, column: "blob") == [0, 1, 255])
            #expect(try row.decode(PostgresJSON.self, column: "doc").text == #"{"a": 1}"#)
            #expect(try row.decode([String].self, column: "names") == ["x", "y z"])
            #expect(try row.decode([Int64].self, column: "numbers") == [1, -2])
            #expect(try row.decode([RaveID].self, column: "ids") == [id])
            #expect(try row.decode(String?.self, column: "missing") == nil)
            #expect(try row.decode(String?.self, at: 0) == "héllo\tworld")
        }
    }

    @Test func emptyArraysAreArraysOfTheirElementTypeNotBytea() async throws {
        // An empty array of any element type casts to [UInt8]; it must still go out as its own array type.
        #expect([RaveID]().postgresValue?.type != [UInt8]().postgresValue?.type)
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let rows = try await connection.query(
                "SELECT cardinality($1::uuid[]) AS ids, cardinality($2::text[]) AS names, $1::uuid[] AS echoed",
                [[RaveID](), [String]()])
            let row = try #require(rows.first)
            #expect(try row.decode(Int32.self, column: "ids") == 0)
            #expect(try row.decode(Int32.self, column: "names") == 0)
            #expect(try row.decode([RaveID].self, column: "echoed") == [])
        }
    }

    @Test func nullIntoNonOptionalNamesTheColumn() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let row = try #require(try await connection.query("SELECT NULL::text AS nickname").first)
            let error = try #require(throws: PostgresError.self) { try row.decode(String.self, column: "nickname") }
            #expect(error.code == .decoding && error.message.contains("nickname"))
        }
    }

    @Test func uniqueViolationMapsToAlreadyExists() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript("CREATE TABLE users (id int8 PRIMARY KEY, name text NOT NULL)")
            let insert = PostgresStatement(name: "insert_user", sql: "INSERT INTO users (id, name) VALUES ($1, $2)")
            try await connection.execute(insert, [1, "ann"])
            let error = try await #require(throws: PostgresError.self) {
                try await connection.execute(insert, [1, "bob"])
            }
            #expect(error.kind == .alreadyExists && error.statusCodeName == "ALREADY_EXISTS")
            #expect(error.sqlState == "23505" && error.constraint == "users_pkey")
            let notNull = try await #require(throws: PostgresError.self) {
                try await connection.execute(insert, [2, nil as String?])
            }
            #expect(notNull.kind == .invalidArgument)
            #expect(notNull.statusMessage == "a required value is missing")
            // The cached statement keeps working after errors.
            try await connection.execute(insert, [3, "cy"])
            let count = try await connection.query("SELECT count(*) AS n FROM users")
            #expect(try count.first?.decode(Int64.self, column: "n") == 2)
        }
    }

    @Test func deadlineCancelsTheStatementOnTheServer() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let observer = try await database.connect()
            defer { observer.close() }
            // The statement would sleep 30 s: the timeout's error, not its result, shows it was cut short.
            let error = try await #require(throws: PostgresError.self) {
                try await connection.query(PostgresQuery("SELECT pg_sleep(30)"), timeout: .milliseconds(200))
            }
            #expect(error.code == .queryTimeout && error.kind == .deadlineExceeded)
            let active = try await observer.query(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND state = 'active' "
                    + "AND query LIKE 'SELECT pg_sleep%'", [database.name])
            #expect(try active.first?.decode(Int64.self, column: "n") == 0)
            // The connection stays usable.
            #expect(try await connection.query("SELECT 1 AS one").first?.decode(Int.self, column: "one") == 1)
        }
    }

    @Test func taskCancellationCancelsTheStatement() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let observer = try await database.connect()
            defer { observer.close() }
            let task = Task { try await connection.query("SELECT pg_sleep(30)") }
            // Cancel once the statement runs on the server (a fixed pause could cancel before it was sent).
            try await eventually {
                let active = try await observer.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND state = 'active' "
                        + "AND query LIKE 'SELECT pg_sleep%'", [database.name])
                return try active.first?.decode(Int64.self, column: "n") == 1
            }
            task.cancel()
            let error = try await #require(throws: PostgresError.self) { try await task.value }
            #expect(error.kind == .cancelled)
        }
    }

    @Test func pipelineRunsAThousandInsertsInOneRoundTrip() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript("CREATE TABLE events (id int8 PRIMARY KEY, note text)")
            let queries = (0..<1_000).map { (index: Int) in
                PostgresQuery("INSERT INTO events (id, note) VALUES ($1, $2)", [index, "note \(index)"])
            }
            let results = try await connection.pipeline(queries)
            #expect(results.count == 1_000)
            #expect(results.allSatisfy { $0.affectedRowCount == 1 })
            let count = try await connection.query("SELECT count(*) AS n FROM events")
            #expect(try count.first?.decode(Int64.self, column: "n") == 1_000)
        }
    }

    @Test func copyLoadsOneHundredThousandRows() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.runScript("CREATE TABLE scores (id uuid, points int8, at timestamptz, note text)")
            let time = PostgresTimestamp(microsecondsSinceEpoch: 1_700_000_000_000_001)
            let rows = (0..<100_000).lazy.map { index -> [(any PostgresEncodable)?] in
                [RaveID.random(), Int64(index), time, index == 0 ? "tab\there\\" : nil]
            }
            let copied = try await connection.copyFrom(
                table: "scores", columns: ["id", "points", "at", "note"], rows: rows)
            #expect(copied == 100_000)
            let summary = try await connection.query(
                "SELECT count(*) AS n, sum(points) AS total, min(at) AS at, max(note) AS note FROM scores")
            let row = try #require(summary.first)
            #expect(try row.decode(Int64.self, column: "n") == 100_000)
            #expect(try row.decode(PostgresTimestamp.self, column: "at") == time)
            #expect(try row.decode(String.self, column: "note") == "tab\there\\")
        }
    }

    @Test(.timeLimit(.minutes(1))) func rejectedLoginFailsFastWithAClearError() async throws {
        // The test server trusts every local login, so an unknown role stands in for a wrong password: both are
        // refused by the server during authentication.
        let url = try TestDatabase.serverURL()
        guard let scheme = url.range(of: "://"), let at = url.firstIndex(of: "@") else {
            Issue.record("unexpected server URL \(url)")
            return
        }
        let badURL = url[..<scheme.upperBound] + "nobody_here:wrong" + url[at...]
        // "Fast" is the server's refusal, not the connect timeout running out: the error says which, so no stopwatch
        // is needed (one failed this test on a loaded machine). The timeout is long so that a slow machine cannot
        // turn the refusal into a timeout.
        let error = try await #require(throws: PostgresError.self) {
            _ = try await PostgresConnection.connect(
                to: String(badURL), on: TestDatabase.group.next(), timeout: .seconds(30))
        }
        #expect(error.code == .connectionFailed && error.kind == .unavailable)
        #expect(error.message.contains("nobody_here"))
    }

    @Test(.timeLimit(.minutes(1))) func unreachableServerFailsFast() async throws {
        // As above: a refused connection fails with libpq's reason, not by waiting out the timeout.
        let error = try await #require(throws: PostgresError.self) {
            _ = try await PostgresConnection.connect(
                to: "postgresql://rave@127.0.0.1:1/none", on: TestDatabase.group.next(), timeout: .seconds(30))
        }
        #expect(error.code == .connectionFailed && error.kind == .unavailable)
    }

    /// libpq gives up inside `PQconnectStart` when the server's socket cannot exist (a Unix socket in a directory
    /// that is not there): the attempt fails with libpq's reason, and the connection is finished exactly once (it
    /// once was twice, which crashed a service started with such a `RAVE_DATABASE_URL`).
    @Test(.timeLimit(.minutes(1))) func aConnectionThatFailsAtOnceIsAnErrorNotACrash() async throws {
        for url in ["postgresql:///nowhere?host=/nonexistent-rave-socket-dir", "postgresql:///nowhere"] {
            let error = try await #require(throws: PostgresError.self) {
                _ = try await PostgresConnection.connect(to: url, on: TestDatabase.group.next(), timeout: .seconds(30))
            }
            #expect(!error.message.isEmpty)
        }
    }
}

@Suite struct PreparedStatementCacheTests {
    @Test func leastRecentlyUsedStatementIsDeallocatedOnTheServer() async throws {
        try await TestDatabase.with { database in
            let connection = try await PostgresConnection.connect(
                to: database.url, on: TestDatabase.group.next(), statementCacheSize: 2)
            defer { connection.close() }
            let statements = (1...3).map { PostgresStatement(name: "lru_\($0)", sql: "SELECT \($0)::int8 AS n") }
            try await connection.execute(statements[0])
            try await connection.execute(statements[1])
            try await connection.execute(statements[0])  // lru_2 is now the least recently used
            try await connection.execute(statements[2])
            let prepared = try await connection.query("SELECT name FROM pg_prepared_statements ORDER BY name")
            #expect(try prepared.map { try $0.decode(String.self, column: "name") } == ["lru_1", "lru_3"])
            // The evicted statement is prepared again transparently.
            let rows = try await connection.execute(statements[1])
            #expect(try rows.first?.decode(Int64.self, column: "n") == 2)
        }
    }

    @Test func evictionInsideAFailedTransactionKeepsTheCacheTruthful() async throws {
        try await TestDatabase.with { database in
            let connection = try await PostgresConnection.connect(
                to: database.url, on: TestDatabase.group.next(), statementCacheSize: 1)
            defer { connection.close() }
            let first = PostgresStatement(name: "kept", sql: "SELECT 1::int8 AS n")
            let second = PostgresStatement(name: "other", sql: "SELECT 2::int8 AS n")
            try await connection.execute(first)
            try await connection.query("BEGIN")
            _ = try? await connection.query("SELECT 1/0")
            await #expect(throws: PostgresError.self) { try await connection.execute(second) }
            try await connection.query("ROLLBACK")
            try await connection.execute(first)
            let rows = try await connection.execute(second)
            #expect(try rows.first?.decode(Int64.self, column: "n") == 2)
        }
    }
}
