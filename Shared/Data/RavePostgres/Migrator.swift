import Foundation
import RaveCrypto

/// One schema change: a version (ordering), a name, and the SQL to run (may hold several statements).
public struct Migration: Sendable, Hashable {
    public var version: Int64
    public var name: String
    public var sql: String

    public init(version: Int64, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// SHA-256 of the SQL; an applied migration must never change.
    public var checksum: String { Hex.encode(Digest.sha256(sql)) }
}

/// Applies migrations in version order at start-up, each in its own transaction, one migrator at a time.
///
/// Applied migrations are recorded in `schema_migrations(version, name, checksum, applied_at)`. A migration
/// that fails is rolled back and not recorded; an applied migration whose SQL changed stops start-up.
public struct Migrator: Sendable {
    public let pool: PostgresPool
    public let migrations: [Migration]

    /// Serializes migrators of every service sharing a server; the value is arbitrary but fixed.
    static let advisoryLockKey: Int64 = 0x5241_5645_4d49_4752

    public init(pool: PostgresPool, migrations: [Migration]) {
        self.pool = pool
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Loads the `NNNN_description.sql` files in `directory`, such as `Services/Social/Migrations`.
    public init(pool: PostgresPool, directory: String) throws {
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw PostgresError(.migration, "cannot list migrations in \(directory): \(error.localizedDescription)")
        }
        var migrations: [Migration] = []
        for file in files.sorted() where file.hasSuffix(".sql") {
            let stem = file.dropLast(4)
            guard let separator = stem.firstIndex(of: "_"), let version = Int64(stem[..<separator]) else {
                throw PostgresError(.migration, "migration file \(file) must be named NNNN_description.sql")
            }
            let path = directory + "/" + file
            guard let data = FileManager.default.contents(atPath: path) else {
                throw PostgresError(.migration, "cannot read migration \(path)")
            }
            migrations.append(
                Migration(
                    version: version, name: String(stem[stem.index(after: separator)...]),
                    sql: String(decoding: data, as: UTF8.self)))
        }
        let versions = migrations.map(\.version)
        if Set(versions).count != versions.count {
            throw PostgresError(.migration, "two migrations in \(directory) share a version number")
        }
        self.init(pool: pool, migrations: migrations)
    }

    /// Applies the pending migrations; returns the ones it applied (none when the schema is current).
    @discardableResult
    public func migrate() async throws -> [Migration] {
        try await pool.withConnection { connection in
            // A session lock rather than a transaction lock: it must cover the check and every migration.
            try await connection.query(PostgresQuery("SELECT pg_advisory_lock($1)", [Self.advisoryLockKey]))
            do {
                let applied = try await applyPending(on: connection)
                try await connection.query(PostgresQuery("SELECT pg_advisory_unlock($1)", [Self.advisoryLockKey]))
                return applied
            } catch {
                _ = try? await connection.query(
                    PostgresQuery("SELECT pg_advisory_unlock($1)", [Self.advisoryLockKey]))
                throw error
            }
        }
    }

    private func applyPending(on connection: PostgresConnection) async throws -> [Migration] {
        try await connection.runScript(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version bigint PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let rows = try await connection.query(PostgresQuery("SELECT version, name, checksum FROM schema_migrations"))
        var recorded: [Int64: (name: String, checksum: String)] = [:]
        for row in rows {
            recorded[try row.decode(Int64.self, column: "version")] = (
                try row.decode(String.self, column: "name"), try row.decode(String.self, column: "checksum")
            )
        }
        var applied: [Migration] = []
        for migration in migrations {
            if let existing = recorded[migration.version] {
                guard existing.checksum == migration.checksum else {
                    throw PostgresError(
                        .migration,
                        "migration \(migration.version)_\(migration.name) was changed after it was applied "
                            + "(checksum \(existing.checksum.prefix(12))… in the database, "
                            + "\(migration.checksum.prefix(12))… on disk); add a new migration instead")
                }
                continue
            }
            try await apply(migration, on: connection)
            applied.append(migration)
        }
        return applied
    }

    private func apply(_ migration: Migration, on connection: PostgresConnection) async throws {
        try await connection.runScript("BEGIN")
        do {
            try await connection.runScript(migration.sql)
            try await connection.query(
                PostgresQuery(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    [migration.version, migration.name, migration.checksum]))
            try await connection.runScript("COMMIT")
        } catch {
            _ = try? await connection.runScript("ROLLBACK")
            let reason = (error as? PostgresError)?.message ?? "\(error)"
            throw PostgresError(
                .migration, "migration \(migration.version)_\(migration.name) failed and was rolled back: \(reason)",
                sqlState: (error as? PostgresError)?.sqlState)
        }
    }
}
