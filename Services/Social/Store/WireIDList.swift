import RavePostgres

/// A `uuid[]` cell read straight into wire-form Rave IDs (32 lowercase hex digits each).
///
/// FriendIds answers with a thousand ids; going from the array's bytes to the strings in one pass skips a
/// `PostgresCell` and a `RaveID` per element, and SQL NULL (`array_agg` over no rows) reads as no ids.
struct WireIDList: PostgresDecodable {
    var ids: [String]

    init(postgresCell cell: PostgresCell) throws {
        guard cell.type == .uuidArray else { throw cell.typeMismatch(WireIDList.self) }
        ids = []
        try cell.bytes.withUnsafeBytes { raw in
            var offset = 0
            func int32() throws -> Int {
                guard offset + 4 <= raw.count else { throw cell.typeMismatch(WireIDList.self) }
                let value = raw[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                offset += 4
                return Int(Int32(bitPattern: value))
            }
            let dimensions = try int32()
            offset += 8  // The has-nulls flag and the element type: peer_id is NOT NULL uuid.
            guard dimensions == 1 else {
                guard dimensions == 0 else { throw cell.typeMismatch(WireIDList.self) }
                return
            }
            let count = try int32()
            offset += 4  // The lower bound.
            guard count >= 0, raw.count - offset == count * 20 else { throw cell.typeMismatch(WireIDList.self) }
            ids.reserveCapacity(count)
            for _ in 0..<count {
                guard try int32() == 16 else { throw cell.typeMismatch(WireIDList.self) }
                ids.append(Self.hex(raw[offset..<offset + 16]))
                offset += 16
            }
        }
    }

    static func decodeNull(column: String) throws -> WireIDList {
        WireIDList(ids: [])
    }

    private init(ids: [String]) {
        self.ids = ids
    }

    /// Formats by arithmetic rather than a digit table, so no array is built per id.
    private static func hex(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            var index = 0
            for byte in bytes {
                buffer[index] = digit(byte >> 4)
                buffer[index + 1] = digit(byte & 0xf)
                index += 2
            }
            return 32
        }
    }

    private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? nibble + UInt8(ascii: "0") : nibble - 10 + UInt8(ascii: "a")
    }
}
