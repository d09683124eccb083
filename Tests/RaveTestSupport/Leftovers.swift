import RavePostgres

/// Where a service's database still mentions something that should be gone (a deleted user's id, email, device
/// id): every column of every table in the `public` schema, read as text (bytea payloads as bytes), searched for
/// each needle.
///
/// An account deletion's tests ask it of each service's database after the erasure; `allowed` lists the
/// `table.column` pairs the service documents as kept (the bare `users` row, the audit log).
public enum Leftovers {
    /// A column that mentions a needle, with how many rows do.
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        public var table: String
        public var column: String
        public var needle: String
        public var rows: Int64

        public var description: String { "\(table).\(column) mentions \(needle) in \(rows) row(s)" }
    }

    /// Every column (but `allowed`, as "table.column") mentioning one of `needles` (matched without case; a uuid
    /// needle given as 32 hex digits is also matched in its dashed form).
    public static func find(
        _ needles: [String], in database: some PostgresQueryable, allowed: Set<String> = []
    ) async throws -> [Finding] {
        let columns = try await database.query(
            PostgresQuery(
                """
                SELECT c.table_name::text AS table_name, c.column_name::text AS column_name,
                    c.data_type::text AS data_type
                FROM information_schema.columns c JOIN information_schema.tables t
                    ON t.table_schema = c.table_schema AND t.table_name = c.table_name
                WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
                ORDER BY c.table_name, c.ordinal_position
                """))
        let spelled = needles.flatMap { needle in
            needle.count == 32 && needle.allSatisfy(\.isHexDigit) ? [needle, dashed(needle)] : [needle]
        }
        var findings: [Finding] = []
        for row in columns {
            let table = try row.decode(String.self, column: "table_name")
            let column = try row.decode(String.self, column: "column_name")
            guard !allowed.contains("\(table).\(column)") else { continue }
            let text =
                try row.decode(String.self, column: "data_type") == "bytea"
                ? "encode(\"\(column)\", 'escape')" : "\"\(column)\"::text"
            for needle in spelled {
                let count = try await database.query(
                    PostgresQuery(
                        "SELECT count(*) AS n FROM \"\(table)\" WHERE position(lower($1) IN lower(\(text))) > 0",
                        [needle]))
                let rows = try count.first?.decode(Int64.self, column: "n") ?? 0
                if rows > 0 { findings.append(Finding(table: table, column: column, needle: needle, rows: rows)) }
            }
        }
        return findings
    }

    /// 0123…ef as the uuid text PostgreSQL prints: 8-4-4-4-12.
    static func dashed(_ hex: String) -> String {
        let characters = Array(hex.lowercased())
        var parts: [String] = []
        var start = 0
        for length in [8, 4, 4, 4, 12] {
            parts.append(String(characters[start..<start + length]))
            start += length
        }
        return parts.joined(separator: "-")
    }
}
