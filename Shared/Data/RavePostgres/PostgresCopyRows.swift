/// Rows of a binary `COPY … TO STDOUT`, read in place from the bytes the server sent: no value or array per row.
///
/// Binary COPY carries no column types, so the caller reads each field as the type its query selects;
/// an accessor checks the field's length (a NULL or a value of another width throws `PostgresError.decoding`).
/// Rows and fields count from 0.
public struct PostgresCopyRows: Sendable {
    /// Fields per row: the number of columns the query selects.
    public let fieldCount: Int
    /// Rows in this chunk.
    public let count: Int
    /// The data as received: the rows' tuples, perhaps with the format's header or trailer around them.
    let bytes: [UInt8]
    /// Per row, then per field, where the field's 4-byte length word starts in `bytes`.
    let fieldOffsets: [Int]

    init(fieldCount: Int, count: Int, bytes: [UInt8], fieldOffsets: [Int]) {
        self.fieldCount = fieldCount
        self.count = count
        self.bytes = bytes
        self.fieldOffsets = fieldOffsets
    }

    static let empty = PostgresCopyRows(fieldCount: 0, count: 0, bytes: [], fieldOffsets: [])

    /// Whether the field is SQL NULL.
    public func isNull(row: Int, field: Int) -> Bool {
        withFieldBytes(row: row, field: field) { $0 == nil }
    }

    /// Runs `body` on the field's bytes in PostgreSQL's binary format, or on nil when it is NULL.
    ///
    /// The buffer is valid only inside `body`.
    public func withFieldBytes<Result>(
        row: Int, field: Int, _ body: (UnsafeRawBufferPointer?) throws -> Result
    ) rethrows -> Result {
        precondition(row >= 0 && row < count && field >= 0 && field < fieldCount, "no field \(field) of row \(row)")
        let start = fieldOffsets[row * fieldCount + field]
        return try bytes.withUnsafeBytes { buffer in
            // The parser checked that the length word and the bytes it announces are in the buffer.
            let length = Int(Int32(bigEndian: buffer.loadUnaligned(fromByteOffset: start, as: Int32.self)))
            guard length >= 0 else { return try body(nil) }
            return try body(UnsafeRawBufferPointer(rebasing: buffer[(start + 4)..<(start + 4 + length)]))
        }
    }

    /// The field as a big-endian integer of exactly `T`'s width (int8 as `Int64`, int4 as `Int32`, …).
    @inline(__always)
    func integer<T: FixedWidthInteger>(_: T.Type, row: Int, field: Int) throws -> T {
        precondition(row >= 0 && row < count && field >= 0 && field < fieldCount, "no field \(field) of row \(row)")
        let start = fieldOffsets[row * fieldCount + field]
        return try bytes.withUnsafeBytes { buffer in
            let length = Int32(bigEndian: buffer.loadUnaligned(fromByteOffset: start, as: Int32.self))
            guard length == MemoryLayout<T>.size else { throw mismatch(T.self, length: length, field: field) }
            return T(bigEndian: buffer.loadUnaligned(fromByteOffset: start + 4, as: T.self))
        }
    }

    /// An `int8` field.
    public func int64(row: Int, field: Int) throws -> Int64 { try integer(Int64.self, row: row, field: field) }
    /// An `int4` field.
    public func int32(row: Int, field: Int) throws -> Int32 { try integer(Int32.self, row: row, field: field) }
    /// An `int2` field.
    public func int16(row: Int, field: Int) throws -> Int16 { try integer(Int16.self, row: row, field: field) }
    /// A `float8` field.
    public func double(row: Int, field: Int) throws -> Double {
        Double(bitPattern: try integer(UInt64.self, row: row, field: field))
    }
    /// A `bool` field.
    public func bool(row: Int, field: Int) throws -> Bool { try integer(UInt8.self, row: row, field: field) != 0 }

    /// A `timestamptz` (or `timestamp`) field as microseconds since 2000-01-01, PostgreSQL's own epoch.
    public func postgresMicroseconds(row: Int, field: Int) throws -> Int64 { try int64(row: row, field: field) }

    /// A `timestamptz` (or `timestamp`) field.
    public func timestamp(row: Int, field: Int) throws -> PostgresTimestamp {
        try decode(PostgresTimestamp.self, row: row, field: field, type: .timestamptz)
    }

    /// A `uuid` field.
    public func raveID(row: Int, field: Int) throws -> RaveID {
        precondition(row >= 0 && row < count && field >= 0 && field < fieldCount, "no field \(field) of row \(row)")
        let start = fieldOffsets[row * fieldCount + field]
        return try bytes.withUnsafeBytes { buffer in
            let length = Int32(bigEndian: buffer.loadUnaligned(fromByteOffset: start, as: Int32.self))
            guard length == 16 else { throw mismatch(RaveID.self, length: length, field: field) }
            return RaveID(
                high: UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: start + 4, as: UInt64.self)),
                low: UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: start + 12, as: UInt64.self)))
        }
    }

    /// A text field (`text`, `varchar`, `name`: binary text is the UTF-8 bytes).
    public func string(row: Int, field: Int) throws -> String {
        try withFieldBytes(row: row, field: field) { bytes in
            guard let bytes else { throw PostgresError.unexpectedNull(column: "field \(field)") }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// A field of any decodable type, read as PostgreSQL type `type` (which the query must select);
    /// NULL decodes as the type's NULL (nil for an Optional).
    public func decode<Value: PostgresDecodable>(
        _: Value.Type = Value.self, row: Int, field: Int, type: PostgresType
    ) throws -> Value {
        precondition(row >= 0 && row < count && field >= 0 && field < fieldCount, "no field \(field) of row \(row)")
        let start = fieldOffsets[row * fieldCount + field]
        let length = bytes.withUnsafeBytes {
            Int(Int32(bigEndian: $0.loadUnaligned(fromByteOffset: start, as: Int32.self)))
        }
        guard length >= 0 else { return try Value.decodeNull(column: "field \(field)") }
        return try Value(
            postgresCell: PostgresCell(
                column: "field \(field)", type: type, bytes: bytes[(start + 4)..<(start + 4 + length)]))
    }

    private func mismatch(_ swiftType: Any.Type, length: Int32, field: Int) -> PostgresError {
        if length < 0 { return PostgresError.unexpectedNull(column: "field \(field)") }
        return PostgresError(
            .decoding, "field \(field) holds \(length) bytes, which is not the binary format of \(swiftType)")
    }
}

/// Reads PostgreSQL's binary COPY format (header, tuples, trailer) from pieces of any size, as they arrive.
///
/// The format: the 11-byte signature "PGCOPY\n\377\r\n\0", a 32-bit flags field, a 32-bit header extension
/// length and that many bytes; then per tuple a 16-bit field count and per field a 32-bit length (-1: NULL)
/// followed by that many bytes; then a 16-bit -1 trailer. Every integer is big-endian.
///
/// Each piece becomes one `PostgresCopyRows` that reads the piece in place. A tuple cut by the end of a piece is
/// kept and completed by the next one (the server sends whole tuples, so that costs a copy only if it does not).
/// Anything that is not this format throws `PostgresError.malformedData`; so does `finish()` when the trailer has
/// not come.
struct PostgresCopyOutParser {
    static let signature: [UInt8] = Array("PGCOPY\n".utf8) + [0xff, 0x0d, 0x0a, 0x00]
    /// Signature, flags, header extension length.
    static let fixedHeaderLength = 19

    private enum Stage {
        case header
        case tuples
        case ended
    }

    private var stage = Stage.header
    /// The start of a header or tuple that the last piece cut off.
    private var carry: [UInt8] = []
    /// Fields per tuple, set by the first tuple; every tuple must have as many.
    private(set) var fieldCount: Int?
    /// Tuples read so far.
    private(set) var rowCount = 0
    /// Bytes read so far, for error messages.
    private var consumed = 0

    /// Reads the next piece of the stream.
    mutating func parse(_ piece: [UInt8]) throws -> PostgresCopyRows {
        guard stage != .ended else {
            if piece.isEmpty { return .empty }
            throw malformed("\(piece.count) bytes of data after the trailer")
        }
        let data: [UInt8]
        if carry.isEmpty {
            data = piece
        } else {
            data = carry + piece
            consumed -= carry.count
            carry = []
        }
        var offset = 0
        if stage == .header {
            guard let headerLength = try readHeader(data) else {
                carry = data
                return .empty
            }
            offset = headerLength
            stage = .tuples
        }
        var fieldOffsets: [Int] = []
        var rows = 0
        let fields = try data.withUnsafeBytes { buffer -> Int in
            func int16(at position: Int) -> Int {
                Int(Int16(bigEndian: buffer.loadUnaligned(fromByteOffset: position, as: Int16.self)))
            }
            func int32(at position: Int) -> Int {
                Int(Int32(bigEndian: buffer.loadUnaligned(fromByteOffset: position, as: Int32.self)))
            }
            var fields = fieldCount ?? -1
            tuples: while offset + 2 <= buffer.count {
                let tupleStart = offset
                let declared = int16(at: offset)
                if declared == -1 {
                    stage = .ended
                    offset += 2
                    guard offset == buffer.count else {
                        throw malformed("\(buffer.count - offset) bytes of data after the trailer")
                    }
                    break
                }
                guard declared >= 0 else {
                    throw malformed("a tuple declares \(declared) fields (at byte \(consumed + offset))")
                }
                if fields < 0 { fields = declared }
                guard declared == fields else {
                    throw malformed(
                        "a tuple declares \(declared) fields where the first declared \(fields) "
                            + "(at byte \(consumed + offset))")
                }
                offset += 2
                let firstOffset = fieldOffsets.count
                for _ in 0..<fields {
                    guard offset + 4 <= buffer.count else {
                        fieldOffsets.removeSubrange(firstOffset...)
                        offset = tupleStart
                        break tuples
                    }
                    let length = int32(at: offset)
                    guard length >= -1 else {
                        throw malformed("a field declares a length of \(length) (at byte \(consumed + offset))")
                    }
                    guard offset + 4 + max(0, length) <= buffer.count else {
                        fieldOffsets.removeSubrange(firstOffset...)
                        offset = tupleStart
                        break tuples
                    }
                    fieldOffsets.append(offset)
                    offset += 4 + max(0, length)
                }
                rows += 1
            }
            return fields
        }
        if fields >= 0 { fieldCount = fields }
        if offset < data.count, stage == .tuples { carry = Array(data[offset...]) }
        consumed += data.count
        rowCount += rows
        guard rows > 0 else { return .empty }
        return PostgresCopyRows(fieldCount: fields, count: rows, bytes: data, fieldOffsets: fieldOffsets)
    }

    /// Checks that the stream ended with its trailer.
    func finish() throws {
        switch stage {
        case .ended: return
        case .header where consumed == 0 && carry.isEmpty:
            throw malformed("the COPY sent no data, not even the header")
        case .header: throw malformed("the COPY data ended inside the header (\(carry.count) bytes)")
        case .tuples:
            throw malformed(
                "the COPY data ended without the trailer after \(rowCount) tuples"
                    + (carry.isEmpty ? "" : ", \(carry.count) bytes into an unfinished one"))
        }
    }

    /// The header's length when `data` holds all of it, nil when it holds only a part.
    private func readHeader(_ data: [UInt8]) throws -> Int? {
        let signatureLength = Self.signature.count
        guard data.starts(with: Self.signature.prefix(min(signatureLength, data.count))) else {
            throw malformed("the data does not start with the binary COPY signature")
        }
        guard data.count >= Self.fixedHeaderLength else { return nil }
        func uint32(at position: Int) -> UInt32 {
            data[position..<position + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        let flags = uint32(at: signatureLength)
        // Bit 16 says each tuple carries an OID; bits 17…31 are flags a reader must understand.
        guard flags >> 16 == 0 else {
            throw malformed("the header has flags 0x\(String(flags, radix: 16)); only 0 (no OIDs) can be read")
        }
        let extensionLength = uint32(at: signatureLength + 4)
        guard extensionLength <= Int32.max else {
            throw malformed("the header extension declares \(Int32(bitPattern: extensionLength)) bytes")
        }
        let headerLength = Self.fixedHeaderLength + Int(extensionLength)
        return data.count >= headerLength ? headerLength : nil
    }

    private func malformed(_ message: String) -> PostgresError {
        PostgresError(.malformedData, "malformed binary COPY data: \(message)")
    }
}
