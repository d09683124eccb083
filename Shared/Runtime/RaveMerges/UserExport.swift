import Foundation
import RavePostgres
import RaveRPC

/// One page of an account export as identity's export job asks it of a data service
/// (`rave.export.v1.ExportParticipant`), its fields checked.
public struct UserExport: Sendable, Hashable {
    /// The export this page belongs to (for the log).
    public var exportID: String
    /// The exported user.
    public var userID: RaveID
    /// The users merged into `userID` that the request names (the service's `merged_users` may know more).
    public var mergedIDs: [RaveID]
    /// Where the page starts; nil for the first page.
    public var cursor: ExportCursor?

    /// Merged ids one request may name.
    public static let maximumMergedIDs = 1000

    /// Checks the request's fields; a problem is `ExportError.invalidArgument` in our words.
    public init(exportID: String, userID: String, mergedUserIDs: [String], cursor: String) throws(ExportError) {
        guard (1...128).contains(exportID.utf8.count) else {
            throw .invalidArgument("export_id must be 1…128 bytes, got \(exportID.utf8.count)")
        }
        guard mergedUserIDs.count <= Self.maximumMergedIDs else {
            throw .invalidArgument(
                "merged_user_ids may hold at most \(Self.maximumMergedIDs) ids, got \(mergedUserIDs.count)")
        }
        self.exportID = exportID
        self.userID = try Self.id(userID, field: "user_id")
        mergedIDs = []
        for text in mergedUserIDs {
            let id = try Self.id(text, field: "merged_user_ids")
            if id != self.userID, !mergedIDs.contains(id) { mergedIDs.append(id) }
        }
        self.cursor = cursor.isEmpty ? nil : try ExportCursor(cursor)
    }

    private static func id(_ text: String, field: String) throws(ExportError) -> RaveID {
        guard let id = RaveID(wire: text) else {
            throw .invalidArgument("\(field) must be a Rave ID (32 lowercase hex digits), got \(text.utf8.count) bytes")
        }
        return id
    }
}

/// Why an export page is refused.
public struct ExportError: Error, Hashable, RPCStatusConvertible {
    public var code: StatusCode
    public var message: String

    public static func invalidArgument(_ message: String) -> Self { Self(code: .invalidArgument, message: message) }

    /// The one refusal of a cursor, whatever is wrong with it: it is opaque to the caller.
    static let badCursor = invalidArgument("cursor is not a next_cursor this service returned")

    public var rpcError: RPCError? { RPCError(code, message) }
}

// MARK: - Pages

/// Where an export page starts: a section, and the key of the last record of it already exported (none: the
/// section's start).
///
/// Written as `1.<section>[.<key part>…]`, each key part base64 of its text, so a text key may hold any character.
public struct ExportCursor: Sendable, Hashable {
    public var section: String
    public var key: [String]

    public init(section: String, key: [String]) {
        self.section = section
        self.key = key
    }

    /// Reads a cursor this type wrote; anything else is `ExportError.badCursor`.
    public init(_ text: String) throws(ExportError) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard text.utf8.count <= 4096, parts.count >= 2, parts[0] == "1", !parts[1].isEmpty,
            parts[1].utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F })
        else { throw .badCursor }
        section = String(parts[1])
        key = []
        for part in parts.dropFirst(2) {
            guard let data = Data(base64Encoded: String(part)), let text = String(data: data, encoding: .utf8) else {
                throw .badCursor
            }
            key.append(text)
        }
    }

    public var text: String {
        (["1", section] + key.map { Data($0.utf8).base64EncodedString() }).joined(separator: ".")
    }
}

/// How a section's rows are ordered for paging: a column of the section's query and its type.
public struct ExportKeyColumn: Sendable, Hashable {
    enum Kind: Hashable {
        case integer, id, text
    }

    let column: String
    let kind: Kind

    /// A `bigint` (or smaller integer) column.
    public static func integer(_ column: String) -> Self { Self(column: column, kind: .integer) }
    /// A `uuid` column.
    public static func id(_ column: String) -> Self { Self(column: column, kind: .id) }
    /// A `text` column.
    public static func text(_ column: String) -> Self { Self(column: column, kind: .text) }

    var sqlType: String {
        switch kind {
        case .integer: "bigint"
        case .id: "uuid"
        case .text: "text"
        }
    }

    /// The key part of `row` as a cursor holds it.
    func cursorText(of row: PostgresRow) throws -> String {
        switch kind {
        case .integer: String(try row.decode(Int64.self, column: column))
        case .id: try row.decode(RaveID.self, column: column).hex
        case .text: try row.decode(String.self, column: column)
        }
    }

    /// A cursor's key part as a statement parameter; nil when it is not one this column holds.
    func parameter(_ text: String) -> (any PostgresEncodable)? {
        switch kind {
        case .integer: Int64(text)
        case .id: RaveID(wire: text)
        case .text: text.utf8.contains(0) ? nil : text
        }
    }
}

/// One section of a service's export: a query over the exported ids (`$1`, uuid[]), the key that orders it (unique
/// per row, non-NULL), and how a row becomes a record.
public struct ExportSection: Sendable {
    public let name: String
    let keys: [ExportKeyColumn]
    let statement: PostgresStatement
    let record: @Sendable (PostgresRow) throws -> ExportRecord

    /// `sql` is a `SELECT` whose rows name the ids in `$1`, with the `keys` columns among its results; the page
    /// statement wraps it, so it may use `UNION ALL` and need not order or limit.
    public init(
        _ name: String, service: String, sql: String, keys: [ExportKeyColumn],
        record: @escaping @Sendable (PostgresRow) throws -> ExportRecord
    ) {
        precondition(!keys.isEmpty && name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F })
        self.name = name
        self.keys = keys
        self.record = record
        let columns = keys.map { "export_rows.\($0.column)" }.joined(separator: ", ")
        let after = keys.enumerated().map { "$\($0.offset + 3)::\($0.element.sqlType)" }.joined(separator: ", ")
        statement = PostgresStatement(
            name: "\(service)_export_\(name)",
            sql: """
                SELECT * FROM (\(sql)) AS export_rows
                WHERE NOT $2::boolean OR (\(columns)) > (\(after))
                ORDER BY \(columns) LIMIT $\(keys.count + 3)
                """)
    }
}

extension ExportSection {
    /// The "merges" section every participant exports: the merges applied here that name an id, as `merge_id`,
    /// `source_id`, `target_id` and, when the table records it, the time under `time.field`.
    public static func merges(
        service: String, table: String, source: String, target: String,
        time: (column: String, field: String)? = ("applied_at", "applied_at")
    ) -> ExportSection {
        let timeColumn = time.map { ", \($0.column)" } ?? ""
        return ExportSection(
            "merges", service: service,
            sql: """
                SELECT merge_id, \(source), \(target)\(timeColumn) FROM \(table)
                WHERE \(source) = ANY($1::uuid[]) OR \(target) = ANY($1::uuid[])
                """,
            keys: [.text("merge_id")]
        ) { row in
            var record = ExportRecord()
            record.string("merge_id", try row.decode(column: "merge_id"))
            record.id("source_id", try row.decode(column: source))
            record.id("target_id", try row.decode(column: target))
            if let time { record.time(time.field, try row.decode(column: time.column)) }
            return record
        }
    }
}

/// One page of an export: records by section, in section order, and where the next page starts.
public struct ExportPage: Sendable {
    public var sections: [(name: String, records: [[UInt8]])] = []
    /// Empty on the last page.
    public var nextCursor = ""

    /// Records one page holds at most.
    public static let maximumRecords = 1000
    /// Record bytes a page holds at most, unless its one record is larger.
    public static let maximumBytes = 1 << 20

    public var recordCount: Int { sections.reduce(0) { $0 + $1.records.count } }
}

extension UserExport {
    /// The page of `sections` (in this order) that starts at the request's cursor, read from `database` (a
    /// transaction gives the page one snapshot); a cursor naming no section of them, or holding a key that does
    /// not fit the section's, is `ExportError.badCursor`.
    public func page(
        of sections: [ExportSection], ids: [RaveID], in database: some PostgresQueryable,
        maximumRecords: Int = ExportPage.maximumRecords, maximumBytes: Int = ExportPage.maximumBytes
    ) async throws -> ExportPage {
        var index = 0
        var after: [(any PostgresEncodable)?]? = nil
        if let cursor {
            guard let found = sections.firstIndex(where: { $0.name == cursor.section }) else {
                throw ExportError.badCursor
            }
            index = found
            if !cursor.key.isEmpty {
                let keys = sections[found].keys
                guard cursor.key.count == keys.count else { throw ExportError.badCursor }
                var parameters: [(any PostgresEncodable)?] = []
                for (column, text) in zip(keys, cursor.key) {
                    guard let parameter = column.parameter(text) else { throw ExportError.badCursor }
                    parameters.append(parameter)
                }
                after = parameters
            }
        }
        var page = ExportPage()
        var bytes = 0
        while index < sections.count {
            let section = sections[index]
            let room = maximumRecords - page.recordCount
            guard room > 0 else {
                page.nextCursor = ExportCursor(section: section.name, key: []).text
                return page
            }
            let start: [(any PostgresEncodable)?] = after ?? section.keys.map { _ in nil }
            let rows = try await database.execute(
                section.statement, [ids, after != nil] + start + [Int64(room + 1)])
            var records: [[UInt8]] = []
            var last: PostgresRow?
            for row in rows.prefix(room) {
                let record = try section.record(row).json
                if bytes + record.count > maximumBytes, page.recordCount + records.count > 0 {
                    break
                }
                bytes += record.count
                records.append(record)
                last = row
            }
            if !records.isEmpty { page.sections.append((section.name, records)) }
            if records.count < min(rows.count, room) || rows.count > room {
                // The page is full before the section ends: the next one resumes after its last record here.
                let key = try last.map { row in try section.keys.map { try $0.cursorText(of: row) } } ?? []
                page.nextCursor = ExportCursor(section: section.name, key: key).text
                return page
            }
            index += 1
            after = nil
        }
        return page
    }
}

extension MergedUsers {
    /// The ids an export covers, as an erasure would find them: the user, the merged ids the request named, and
    /// every source `merged_users` records as merged into any of them.
    public func exportedIDs(_ export: UserExport, in database: some PostgresQueryable) async throws -> [RaveID] {
        var ids = [export.userID] + export.mergedIDs
        let named = try await database.execute(MergedUsersStore.sourcesOfAny, [ids]).map {
            try $0.decode(RaveID.self, at: 0)
        }
        for id in named where !ids.contains(id) { ids.append(id) }
        return ids
    }

    /// One page of `export` over `sections`: the ids and the rows read in one snapshot.
    public func exportPage(_ export: UserExport, of sections: [ExportSection]) async throws -> ExportPage {
        let page = try await pool.transaction(isolation: .repeatableRead) { transaction in
            try await export.page(of: sections, ids: exportedIDs(export, in: transaction), in: transaction)
        }
        logger.info(
            "exported a page",
            [
                ("export_id", export.exportID), ("records", "\(page.recordCount)"),
                ("last", "\(page.nextCursor.isEmpty)"),
            ])
        return page
    }
}
