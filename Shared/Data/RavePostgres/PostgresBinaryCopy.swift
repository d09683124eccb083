/// A value that writes PostgreSQL's binary format straight into a buffer, with no allocation of its own.
///
/// Binary COPY (`PostgresCopyWriter`) uses it: the server parses binary fields without text conversion, which is
/// what makes bulk loads fast. The column's type must match the Swift type exactly (`Int` and `Int64` are `int8`,
/// `Int32` is `int4`, `Int16` is `int2`, `RaveID` is `uuid`, `PostgresTimestamp` and `Date` are `timestamptz`,
/// `String` is `text`, `[UInt8]` is `bytea`, `PostgresJSON` is `jsonb`): the server rejects a mismatch with
/// "incorrect binary data format".
public protocol PostgresBinaryEncodable {
    /// Appends the value's binary format, without a length prefix; never called for SQL NULL.
    func appendPostgresBinary(to bytes: inout [UInt8])
    /// Whether the value is SQL NULL; only `Optional.none` is.
    var isPostgresNull: Bool { get }
    /// The PostgreSQL type of the binary format written (sent with PREPARE by `executeMany`).
    static var postgresType: PostgresType { get }
}

extension PostgresBinaryEncodable {
    public var isPostgresNull: Bool { false }
}

extension Int64: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .int8 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { appendBigEndian(self, to: &bytes) }
}

extension Int: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .int8 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { appendBigEndian(Int64(self), to: &bytes) }
}

extension Int32: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .int4 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { appendBigEndian(self, to: &bytes) }
}

extension Int16: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .int2 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { appendBigEndian(self, to: &bytes) }
}

extension Bool: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .bool }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { bytes.append(self ? 1 : 0) }
}

extension Double: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .float8 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { appendBigEndian(bitPattern, to: &bytes) }
}

extension String: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .text }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { bytes.append(contentsOf: utf8) }
}

extension RaveID: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .uuid }
    public func appendPostgresBinary(to bytes: inout [UInt8]) {
        appendBigEndian(high, to: &bytes)
        appendBigEndian(low, to: &bytes)
    }
}

extension PostgresTimestamp: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .timestamptz }
    public func appendPostgresBinary(to bytes: inout [UInt8]) {
        appendBigEndian(microsecondsSinceEpoch - Self.postgresEpochOffset, to: &bytes)
    }
}

extension PostgresJSON: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { .jsonb }
    public func appendPostgresBinary(to bytes: inout [UInt8]) {
        bytes.append(1)  // jsonb's binary format version
        bytes.append(contentsOf: text.utf8)
    }
}

extension Array: PostgresBinaryEncodable where Element == UInt8 {
    public static var postgresType: PostgresType { .bytea }
    /// Bytes are sent as `bytea`.
    public func appendPostgresBinary(to bytes: inout [UInt8]) { bytes.append(contentsOf: self) }
}

extension Optional: PostgresBinaryEncodable where Wrapped: PostgresBinaryEncodable {
    public static var postgresType: PostgresType { Wrapped.postgresType }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { self?.appendPostgresBinary(to: &bytes) }
    public var isPostgresNull: Bool { self == nil }
}

/// Builds the data of a binary `COPY … FROM STDIN (FORMAT binary)` in large chunks, ready to hand to libpq.
///
/// Rows go straight into one growing buffer (no per-cell value or array), which is cut into chunks of about
/// `chunkSize` bytes so each `PQputCopyData` call moves a lot at once. Fill it inside
/// `PostgresConnection.copyFrom(table:columns:writingRows:)`.
public struct PostgresCopyWriter {
    /// "PGCOPY\n\377\r\n\0", then 32-bit flags (0: no OIDs) and header extension length (0).
    private static let header: [UInt8] = Array("PGCOPY\n".utf8) + [0xff, 0x0d, 0x0a, 0x00] + [0, 0, 0, 0, 0, 0, 0, 0]

    private var chunks: [[UInt8]] = []
    private var buffer: [UInt8] = []
    private let chunkSize: Int
    /// Rows appended so far.
    public private(set) var rowCount = 0

    /// A writer whose chunks are about `chunkSize` bytes (default 256 KiB).
    public init(chunkSize: Int = 256 * 1024) {
        self.chunkSize = max(1024, chunkSize)
        buffer.reserveCapacity(self.chunkSize + 4096)
        buffer.append(contentsOf: Self.header)
    }

    /// Appends one row; pass one value per column, in the order the columns were named.
    public mutating func appendRow<each Value: PostgresBinaryEncodable>(_ values: repeat each Value) {
        let fieldCountPosition = buffer.count
        buffer.append(0)
        buffer.append(0)
        var fieldCount: Int16 = 0
        repeat appendField(each values, counting: &fieldCount)
        buffer.withUnsafeMutableBytes {
            $0.storeBytes(of: fieldCount.bigEndian, toByteOffset: fieldCountPosition, as: Int16.self)
        }
        rowCount += 1
        if buffer.count >= chunkSize { cutChunk() }
    }

    /// Appends one row of values whose types are known only at run time (slower than `appendRow(_:)`).
    public mutating func appendRow(fields: [any PostgresBinaryEncodable]) {
        appendBigEndian(Int16(fields.count), to: &buffer)
        for field in fields {
            var ignored: Int16 = 0
            appendField(field, counting: &ignored)
        }
        rowCount += 1
        if buffer.count >= chunkSize { cutChunk() }
    }

    private mutating func appendField(_ value: some PostgresBinaryEncodable, counting fieldCount: inout Int16) {
        fieldCount += 1
        if value.isPostgresNull {
            appendBigEndian(Int32(-1), to: &buffer)
            return
        }
        let lengthPosition = buffer.count
        appendBigEndian(Int32(0), to: &buffer)
        value.appendPostgresBinary(to: &buffer)
        let length = Int32(truncatingIfNeeded: buffer.count - lengthPosition - 4)
        buffer.withUnsafeMutableBytes {
            $0.storeBytes(of: length.bigEndian, toByteOffset: lengthPosition, as: Int32.self)
        }
    }

    private mutating func cutChunk() {
        chunks.append(buffer)
        // A fresh buffer rather than removeAll(keepingCapacity:): the chunk just stored still shares the old one.
        buffer = []
        buffer.reserveCapacity(chunkSize + 4096)
    }

    /// Ends the data (the -1 trailer) and returns the chunks to send.
    mutating func finish() -> [[UInt8]] {
        appendBigEndian(Int16(-1), to: &buffer)
        chunks.append(buffer)
        buffer = []
        return chunks
    }
}

extension PostgresConnection {
    /// Bulk-loads rows with a binary `COPY … FROM STDIN`; `writeRows` appends them; returns the rows copied.
    ///
    /// The fastest way in: no text formatting on either side. Each value's Swift type must match its column's type
    /// (see `PostgresBinaryEncodable`). The rows are built before sending, so memory grows with their size.
    @discardableResult
    public func copyFrom(
        table: String, columns: [String], writingRows writeRows: (inout PostgresCopyWriter) throws -> Void
    ) async throws -> Int {
        var writer = PostgresCopyWriter()
        try writeRows(&writer)
        let quotedColumns = columns.map(Self.quoteIdentifier).joined(separator: ", ")
        let sql = "COPY \(Self.quoteQualified(table)) (\(quotedColumns)) FROM STDIN (FORMAT binary)"
        let result = try await run(.copy(sql: sql, chunks: writer.finish()), timeout: defaultTimeout)
        return result.last?.affectedRowCount ?? 0
    }

    /// Bulk-loads typed rows (tuples, one element per column) with a binary COPY; returns the rows copied.
    @discardableResult
    public func copyFrom<each Value: PostgresBinaryEncodable>(
        table: String, columns: [String], rows: some Sequence<(repeat each Value)>
    ) async throws -> Int {
        try await copyFrom(table: table, columns: columns) { writer in
            for row in rows { writer.appendRow(repeat each row) }
        }
    }
}
