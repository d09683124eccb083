/// A result column: its name and PostgreSQL type.
public struct PostgresColumn: Sendable, Hashable {
    public var name: String
    public var type: PostgresType
}

/// The rows a statement returned, copied out of libpq into one buffer, plus its command tag.
///
/// Values are in binary format; read them with `PostgresRow.decode`.
public struct PostgresRows: Sendable, RandomAccessCollection {
    public let columns: [PostgresColumn]
    /// The command tag ("INSERT 0 1", "SELECT 3").
    public let commandTag: String
    let storage: [UInt8]
    /// Per cell, row-major: where its bytes start in `storage` and how many; length -1 is NULL.
    let cells: [(start: Int32, length: Int32)]
    let columnIndex: [String: Int]

    init(columns: [PostgresColumn], commandTag: String, storage: [UInt8], cells: [(start: Int32, length: Int32)]) {
        self.columns = columns
        self.commandTag = commandTag
        self.storage = storage
        self.cells = cells
        var index: [String: Int] = [:]
        for (position, column) in columns.enumerated() where index[column.name] == nil {
            index[column.name] = position
        }
        columnIndex = index
    }

    static let empty = PostgresRows(columns: [], commandTag: "", storage: [], cells: [])

    public var startIndex: Int { 0 }
    public var endIndex: Int { columns.isEmpty ? 0 : cells.count / columns.count }

    public subscript(position: Int) -> PostgresRow { PostgresRow(rows: self, index: position) }

    /// Rows a command touched (from the command tag: "UPDATE 3" → 3), or the number of rows returned.
    public var affectedRowCount: Int {
        if let last = commandTag.split(separator: " ").last, let count = Int(last) { return count }
        return count
    }
}

/// One row of a result; decode its columns by name or position.
public struct PostgresRow: Sendable {
    let rows: PostgresRows
    let index: Int

    /// Decodes the named column; NULL needs an Optional type (`String?`), otherwise it throws naming the column.
    public func decode<Value: PostgresDecodable>(_ type: Value.Type = Value.self, column name: String) throws -> Value {
        guard let position = rows.columnIndex[name] else {
            let known = rows.columns.map(\.name).joined(separator: ", ")
            throw PostgresError(.decoding, "no column \"\(name)\" in the result (columns: \(known))")
        }
        return try decode(type, at: position)
    }

    /// Decodes the column at `position` (0-based).
    public func decode<Value: PostgresDecodable>(_ type: Value.Type = Value.self, at position: Int) throws -> Value {
        guard position >= 0, position < rows.columns.count else {
            throw PostgresError(.decoding, "column index \(position) is out of range 0..<\(rows.columns.count)")
        }
        let column = rows.columns[position]
        let cell = rows.cells[index * rows.columns.count + position]
        if cell.length < 0 { return try Value.decodeNull(column: column.name) }
        let start = Int(cell.start)
        let bytes = rows.storage[start..<start + Int(cell.length)]
        return try Value(postgresCell: PostgresCell(column: column.name, type: column.type, bytes: bytes))
    }

    /// Whether the column at `position` is NULL.
    public func isNull(at position: Int) -> Bool {
        rows.cells[index * rows.columns.count + position].length < 0
    }
}
