import Foundation
import RavePostgres
import Testing

@Suite struct MigratorTests {
    private let first = Migration(
        version: 1, name: "create_players", sql: "CREATE TABLE players (id uuid PRIMARY KEY);")
    private let second = Migration(
        version: 2, name: "add_name", sql: "ALTER TABLE players ADD COLUMN name text; CREATE INDEX ON players (name);")

    private func appliedVersions(_ pool: PostgresPool) async throws -> [Int64] {
        try await pool.query("SELECT version FROM schema_migrations ORDER BY version").map {
            try $0.decode(Int64.self, column: "version")
        }
    }

    @Test func appliesInOrderAndRerunIsANoOp() async throws {
        try await TestDatabase.with { database in
            let pool = try database.makePool()
            defer { pool.shutdown() }
            let applied = try await Migrator(pool: pool, migrations: [second, first]).migrate()
            #expect(applied.map(\.version) == [1, 2])
            #expect(try await Migrator(pool: pool, migrations: [first, second]).migrate().isEmpty)
            #expect(try await appliedVersions(pool) == [1, 2])
            try await pool.query("INSERT INTO players (id, name) VALUES ($1, 'ann')", [RaveID.random()])
        }
    }

    @Test func changedChecksumStopsStartUpNamingTheMigration() async throws {
        try await TestDatabase.with { database in
            let pool = try database.makePool()
            defer { pool.shutdown() }
            try await Migrator(pool: pool, migrations: [first]).migrate()
            var edited = first
            edited.sql += " -- edited"
            let error = try await #require(throws: PostgresError.self) {
                try await Migrator(pool: pool, migrations: [edited]).migrate()
            }
            #expect(error.code == .migration && error.message.contains("1_create_players"))
        }
    }

    @Test func failingMigrationIsRolledBackAndNotRecorded() async throws {
        try await TestDatabase.with { database in
            let pool = try database.makePool()
            defer { pool.shutdown() }
            let broken = Migration(
                version: 3, name: "broken", sql: "CREATE TABLE half_done (id int8); SELECT * FROM no_such_table;")
            let error = try await #require(throws: PostgresError.self) {
                try await Migrator(pool: pool, migrations: [first, broken]).migrate()
            }
            #expect(error.message.contains("3_broken"))
            #expect(try await appliedVersions(pool) == [1])
            let tables = try await pool.query("SELECT to_regclass('half_done')::text AS name")
            #expect(try tables.first?.decode(String?.self, column: "name") == nil)
        }
    }

    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        try await TestDatabase.with { database in
            let pool = try database.makePool(size: 8)
            defer { pool.shutdown() }
            let migrations = [first, second]
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await Migrator(pool: pool, migrations: migrations).migrate().count }
                }
                return try await group.reduce(0, +)
            }
            #expect(counts == 2)
            #expect(try await appliedVersions(pool) == [1, 2])
        }
    }

    @Test func loadsNumberedFilesFromADirectory() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rave-migrations-\(RaveID.random())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try first.sql.write(
            to: directory.appendingPathComponent("0001_create_players.sql"), atomically: true, encoding: .utf8)
        try second.sql.write(
            to: directory.appendingPathComponent("0002_add_name.sql"), atomically: true, encoding: .utf8)
        try await TestDatabase.with { database in
            let pool = try database.makePool()
            defer { pool.shutdown() }
            let migrator = try Migrator(pool: pool, directory: directory.path)
            #expect(migrator.migrations.map(\.name) == ["create_players", "add_name"])
            #expect(try await migrator.migrate().count == 2)
        }
    }
}
