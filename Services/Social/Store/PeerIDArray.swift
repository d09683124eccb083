import RavePostgres

/// A binary `uuid[]` cell read straight into Rave IDs.
///
/// FriendIds reads a thousand ids per call on a cache miss; going from the array's bytes to the ids in one pass
/// skips a `PostgresCell` per element, and SQL NULL (`array_agg` over no rows) reads as no ids.
struct PeerIDArray: PostgresDecodable {
    var ids: [RaveID]

    init(postgresCell cell: PostgresCell) throws {
        guard cell.type == .uuidArray else { throw cell.typeMismatch(PeerIDArray.self) }
        ids = []
        try cell.bytes.withUnsafeBytes { raw in
            var offset = 0
            func integer(width: Int) throws -> UInt64 {
                guard offset + width <= raw.count else { throw cell.typeMismatch(PeerIDArray.self) }
                let value = raw[offset..<offset + width].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                offset += width
                return value
            }
            func int32() throws -> Int { Int(Int32(truncatingIfNeeded: try integer(width: 4))) }
            let dimensions = try int32()
            offset += 8  // The has-nulls flag and the element type: peer_id is NOT NULL uuid.
            guard dimensions == 1 else {
                guard dimensions == 0 else { throw cell.typeMismatch(PeerIDArray.self) }
                return
            }
            let count = try int32()
            offset += 4  // The lower bound.
            guard count >= 0, raw.count - offset == count * 20 else { throw cell.typeMismatch(PeerIDArray.self) }
            ids.reserveCapacity(count)
            for _ in 0..<count {
                guard try int32() == 16 else { throw cell.typeMismatch(PeerIDArray.self) }
                ids.append(RaveID(high: try integer(width: 8), low: try integer(width: 8)))
            }
        }
    }

    static func decodeNull(column: String) throws -> PeerIDArray {
        PeerIDArray(ids: [])
    }

    private init(ids: [RaveID]) {
        self.ids = ids
    }
}
