import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices
import RaveTransport

/// What account-deletion tests check in a service's database, and the participant served as identity calls it.
public enum ErasureChecks {
    /// Every column of every table in the database that names one of `ids`, with how many rows do.
    ///
    /// A column names an id when it is a uuid equal to it, text holding its 32 hex digits or its dashed form,
    /// bytea holding either text or its 16 bytes (protobuf payloads), or a uuid array containing it. The columns
    /// are read from the catalogue, so a table a later migration adds is checked without changing a test; an
    /// empty answer means nothing names them.
    public static func rowsNaming(_ ids: [RaveID], in database: some PostgresQueryable) async throws -> [String: Int] {
        let columns = try await database.query(
            """
            SELECT table_name::text, column_name::text, data_type::text, udt_name::text
            FROM information_schema.columns c
            WHERE table_schema = 'public' AND (data_type IN ('uuid', 'text', 'character varying', 'bytea')
                OR udt_name = '_uuid')
            ORDER BY 1, 2
            """)
        let hex = ids.map(\.hex)
        let dashed = ids.map(\.description)
        var found: [String: Int] = [:]
        for row in columns {
            let table = try row.decode(String.self, at: 0)
            let column = try row.decode(String.self, at: 1)
            let type = try row.decode(String.self, at: 2)
            let condition: String
            switch type {
            case "uuid": condition = "\"\(column)\" = ANY($1::uuid[])"
            case "bytea":
                condition = """
                    EXISTS (SELECT 1 FROM unnest($2::text[]) AS h (text)
                            WHERE position(convert_to(h.text, 'UTF8') IN "\(column)") > 0
                               OR (length(h.text) = 32 AND position(decode(h.text, 'hex') IN "\(column)") > 0))
                    """
            case "ARRAY": condition = "\"\(column)\" && $1::uuid[]"
            default:
                condition =
                    "EXISTS (SELECT 1 FROM unnest($2::text[]) AS h (text) WHERE strpos(\"\(column)\", h.text) > 0)"
            }
            let count = try await database.query(
                "SELECT count(*) FROM \"\(table)\" WHERE \(condition)", [ids, hex + dashed]
            )[0].decode(Int.self, at: 0)
            if count > 0 { found["\(table).\(column)"] = count }
        }
        return found
    }

    /// The number of rows of every table in the database, to show that a repeated erasure changed nothing.
    public static func rowCounts(in database: some PostgresQueryable) async throws -> [String: Int] {
        try await PublicTables.each(in: database) { "SELECT count(*) FROM \($0)" }
    }

    /// The status an error of `body` answers with as the RPC layer maps it, or nil when `body` succeeds.
    public static func status(of body: () async throws -> Void) async -> StatusCode? {
        do {
            try await body()
            return nil
        } catch {
            return RPCError(mapping: error, requestID: "test").code
        }
    }

    /// Serves `participant` as identity calls it (`StandInPeers.servingToIdentityAndGateway`); `body` gets a client
    /// presenting identity's certificate and one presenting the gateway's.
    public static func serving(
        _ participant: some ErasureV1.ErasureParticipantHandler, as serviceName: String, group: EventLoopGroup,
        _ body: (_ identity: ErasureV1.ErasureParticipantClient, _ gateway: ErasureV1.ErasureParticipantClient)
            async throws -> Void
    ) async throws {
        try await StandInPeers.servingToIdentityAndGateway(participant, as: serviceName, group: group) {
            try await body(
                ErasureV1.ErasureParticipantClient(caller: $0), ErasureV1.ErasureParticipantClient(caller: $1))
        }
    }
}

/// The tables of a test database's `public` schema.
enum PublicTables {
    /// `query(table)`, a query of one value (the table's name quoted), for every table, by table name.
    static func each<Value: PostgresDecodable>(
        in database: some PostgresQueryable, _ query: (_ table: String) -> String
    ) async throws -> [String: Value] {
        let tables = try await database.query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
        var values: [String: Value] = [:]
        for row in tables {
            let table = try row.decode(String.self, at: 0)
            values[table] = try await database.query(query("\"\(table)\""))[0].decode(Value.self, at: 0)
        }
        return values
    }
}
