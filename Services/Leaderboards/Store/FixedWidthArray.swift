import RavePostgres

/// A one-dimensional binary PostgreSQL array without NULLs whose elements all have the same width (`uuid[]`,
/// `int8[]`, `timestamptz[]`), read in one pass.
///
/// Loading a board reads its entries as three `array_agg` columns per chunk instead of one row per entry: the
/// server sends three cells instead of 100,000 rows, and the client walks raw bytes instead of decoding a cell
/// per value. That is what makes a 10-million-entry start-up fit in seconds.
struct FixedWidthArray: PostgresDecodable {
    private var storage: ArraySlice<UInt8>
    /// Where the first element's data starts in `storage`, and the distance between elements (length word + data).
    private var firstOffset = 0
    private var stride = 0
    private(set) var count = 0

    init(postgresCell cell: PostgresCell) throws {
        storage = cell.bytes
        let bytes = cell.bytes
        func int32(at offset: Int) throws -> Int {
            guard offset + 4 <= bytes.count else { throw cell.typeMismatch(FixedWidthArray.self) }
            let start = bytes.startIndex + offset
            return Int(
                Int32(
                    bitPattern: UInt32(bytes[start]) << 24 | UInt32(bytes[start + 1]) << 16
                        | UInt32(bytes[start + 2]) << 8 | UInt32(bytes[start + 3])))
        }
        let dimensions = try int32(at: 0)
        guard dimensions == 1 else {
            guard dimensions == 0 else { throw cell.typeMismatch(FixedWidthArray.self) }
            return
        }
        guard try int32(at: 4) == 0 else { throw cell.typeMismatch(FixedWidthArray.self) }
        count = try int32(at: 12)
        firstOffset = 20 + 4
        let width = count > 0 ? try int32(at: 20) : 0
        stride = width + 4
        guard count >= 0, width > 0 || count == 0, bytes.count == 20 + count * stride else {
            throw cell.typeMismatch(FixedWidthArray.self)
        }
    }

    static func decodeNull(column: String) throws -> FixedWidthArray {
        FixedWidthArray()
    }

    private init() {
        storage = []
    }

    /// Element `index` read as a big-endian 64-bit integer at `byteOffset` within it (int8, timestamptz, half a
    /// uuid).
    func uint64(_ index: Int, byteOffset: Int = 0) -> UInt64 {
        let start = storage.startIndex + firstOffset + index * stride + byteOffset
        return storage.withUnsafeBufferPointer { buffer in
            let base = start - storage.startIndex
            return UInt64(
                bigEndian: UnsafeRawBufferPointer(buffer).loadUnaligned(fromByteOffset: base, as: UInt64.self))
        }
    }

    func int64(_ index: Int) -> Int64 { Int64(bitPattern: uint64(index)) }

    func raveID(_ index: Int) -> RaveID { RaveID(high: uint64(index), low: uint64(index, byteOffset: 8)) }
}
