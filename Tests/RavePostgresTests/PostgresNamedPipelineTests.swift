import RavePostgres
import Testing

/// Pipelines of named prepared statements: prepared once per connection, then Bind/Execute only.
@Suite struct PostgresNamedPipelineTests {
    static let increment = PostgresStatement(name: "pipeline_increment", sql: "SELECT $1::int8 + 1 AS n")
    static let double = PostgresStatement(name: "pipeline_double", sql: "SELECT $1::int8 * 2 AS n")

    static func numbers(_ results: [PostgresRows]) throws -> [Int64] {
        try results.map { try #require($0.first).decode(Int64.self, column: "n") }
    }

    static func preparedStatements(on connection: PostgresConnection) async throws -> [String: String] {
        let rows = try await connection.query(
            "SELECT name, prepare_time::text AS at FROM pg_prepared_statements ORDER BY name")
        var prepared: [String: String] = [:]
        for row in rows { prepared[try row.decode(String.self, column: "name")] = try row.decode(at: 1) }
        return prepared
    }

    @Test func namedStatementsArePreparedOnceThenReused() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let queries = [
                PostgresQuery(Self.increment, [Int64(1)]), PostgresQuery("SELECT 7::int8 AS n"),
                PostgresQuery(Self.double, [Int64(5)]), PostgresQuery(Self.increment, [Int64(41)]),
            ]
            #expect(try Self.numbers(try await connection.pipeline(queries)) == [2, 7, 10, 42])
            let first = try await Self.preparedStatements(on: connection)
            #expect(Set(first.keys) == [Self.increment.name, Self.double.name])
            #expect(try Self.numbers(try await connection.pipeline(queries)) == [2, 7, 10, 42])
            // Same prepare times: the second pipeline did not prepare anything again.
            #expect(try await Self.preparedStatements(on: connection) == first)
        }
    }

    @Test func aQueryBuiltFromAStatementRunsPrepared() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let rows = try await connection.query(PostgresQuery(Self.double, [Int64(21)]))
            #expect(try rows.first?.decode(Int64.self, column: "n") == 42)
            #expect(try await Self.preparedStatements(on: connection).keys.contains(Self.double.name))
        }
    }

    @Test func statementsBeyondAFullCacheRunUnprepared() async throws {
        try await TestDatabase.with { database in
            let connection = try await PostgresConnection.connect(
                to: database.url, on: TestDatabase.group.next(), statementCacheSize: 1)
            defer { connection.close() }
            let queries = [PostgresQuery(Self.increment, [Int64(1)]), PostgresQuery(Self.double, [Int64(3)])]
            #expect(try Self.numbers(try await connection.pipeline(queries)) == [2, 6])
            #expect(try await Self.preparedStatements(on: connection).count == 1)
            #expect(try Self.numbers(try await connection.pipeline(queries.reversed())) == [6, 2])
            #expect(try await Self.preparedStatements(on: connection).count == 1)
        }
    }

    @Test func aFailedPrepareIsNotCached() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            let broken = PostgresStatement(name: "pipeline_broken", sql: "SELEC 1")
            let queries = [PostgresQuery(Self.increment, [Int64(1)]), PostgresQuery(broken)]
            for _ in 0..<2 {
                // A syntax error both times, never "prepared statement does not exist".
                let error = await #expect(throws: PostgresError.self) { try await connection.pipeline(queries) }
                #expect(error?.sqlState == "42601")
            }
            #expect(try await Self.preparedStatements(on: connection).keys.sorted() == [Self.increment.name])
        }
    }

    @Test func aPipelineInAFailedTransactionPreparesNothing() async throws {
        try await TestDatabase.with { database in
            let connection = try await database.connect()
            defer { connection.close() }
            try await connection.query("BEGIN")
            _ = try? await connection.query("SELECT 1/0")
            await #expect(throws: PostgresError.self) {
                try await connection.pipeline([PostgresQuery(Self.increment, [Int64(1)])])
            }
            try await connection.query("ROLLBACK")
            let results = try await connection.pipeline([PostgresQuery(Self.increment, [Int64(1)])])
            #expect(try Self.numbers(results) == [2])
        }
    }

    @Test(.timeLimit(.minutes(1))) func aBackendKilledWhilePreparingFailsTheCallAndThePoolRecovers() async throws {
        try await TestDatabase.with { database in
            let pool = try database.makePool(size: 1, acquireTimeout: .seconds(30))
            defer { pool.shutdown() }
            // The backend dies right after the statements at the front of the pipeline were prepared: the call
            // fails instead of waiting for a ReadyForQuery that never comes.
            let queries = [
                PostgresQuery(Self.increment, [Int64(1)]),
                PostgresQuery("SELECT pg_terminate_backend(pg_backend_pid())"), PostgresQuery(Self.double, [Int64(2)]),
            ]
            await #expect(throws: PostgresError.self) {
                try await pool.withConnection { try await $0.pipeline(queries) }
            }
            // The broken connection went back to the pool and was replaced; a fresh one prepares the statements.
            let results = try await pool.withConnection { connection in
                try await connection.pipeline([
                    PostgresQuery(Self.increment, [Int64(1)]), PostgresQuery(Self.double, [Int64(2)]),
                ])
            }
            #expect(try Self.numbers(results) == [2, 4])
        }
    }
}
