// Dynamic messages are encoded by this small writer of the protobuf wire format rather than through a
// protobuf-c C struct: building C structs from a tree means manual allocation for every string, array and
// nested message, while the wire format is a few dozen lines of safe Swift.

extension DynamicMessage {
    /// Encodes the message in the protobuf wire format: fields in number order, repeated scalars packed as
    /// the .proto declares, fields without presence left out at their default.
    public func protobufBytes() -> [UInt8] {
        var writer = WireWriter()
        for (field, value) in setFields { writer.write(value, of: field) }
        return writer.bytes
    }
}

/// Appends protobuf fields to a byte array.
private struct WireWriter {
    private enum WireType: UInt64 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    var bytes: [UInt8] = []

    mutating func write(_ value: DynamicValue, of field: FieldSchema) {
        guard case .list(let elements) = value else {
            writeElement(value, of: field)
            return
        }
        if field.isPacked, field.type != .string, field.type != .bytes, field.type != .message {
            var packed = WireWriter()
            for element in elements { packed.writePayload(element, type: field.type) }
            writeTag(field.number, .lengthDelimited)
            writeVarint(UInt64(packed.bytes.count))
            bytes += packed.bytes
        } else {
            for element in elements { writeElement(element, of: field) }
        }
    }

    private mutating func writeElement(_ value: DynamicValue, of field: FieldSchema) {
        writeTag(field.number, wireType(field.type))
        if wireType(field.type) == .lengthDelimited {
            var payload = WireWriter()
            payload.writePayload(value, type: field.type)
            writeVarint(UInt64(payload.bytes.count))
            bytes += payload.bytes
        } else {
            writePayload(value, type: field.type)
        }
    }

    /// The value without tag or length: varint, fixed-width bytes, or the contents of a length-delimited field.
    private mutating func writePayload(_ value: DynamicValue, type: FieldType) {
        switch (value, type) {
        case (.int32(let number), .sint32): writeVarint(UInt64(UInt32(bitPattern: (number << 1) ^ (number >> 31))))
        case (.int32(let number), .sfixed32): writeLittleEndian(UInt64(UInt32(bitPattern: number)), byteCount: 4)
        // Negative int32 values are sign-extended to ten bytes, as protobuf requires.
        case (.int32(let number), _), (.enumeration(let number), _): writeVarint(UInt64(bitPattern: Int64(number)))
        case (.int64(let number), .sint64): writeVarint(UInt64(bitPattern: (number << 1) ^ (number >> 63)))
        case (.int64(let number), .sfixed64): writeLittleEndian(UInt64(bitPattern: number), byteCount: 8)
        case (.int64(let number), _): writeVarint(UInt64(bitPattern: number))
        case (.uint32(let number), .fixed32): writeLittleEndian(UInt64(number), byteCount: 4)
        case (.uint32(let number), _): writeVarint(UInt64(number))
        case (.uint64(let number), .fixed64): writeLittleEndian(number, byteCount: 8)
        case (.uint64(let number), _): writeVarint(number)
        case (.bool(let flag), _): writeVarint(flag ? 1 : 0)
        case (.float(let number), _): writeLittleEndian(UInt64(number.bitPattern), byteCount: 4)
        case (.double(let number), _): writeLittleEndian(number.bitPattern, byteCount: 8)
        case (.string(let text), _): bytes += Array(text.utf8)
        case (.bytes(let data), _): bytes += data
        case (.message(let message), _): bytes += message.protobufBytes()
        case (.list, _): break  // setValue admits lists only in repeated fields, which `write` unpacks
        }
    }

    private func wireType(_ type: FieldType) -> WireType {
        switch type {
        case .double, .fixed64, .sfixed64: return .fixed64
        case .float, .fixed32, .sfixed32: return .fixed32
        case .string, .bytes, .message: return .lengthDelimited
        default: return .varint
        }
    }

    private mutating func writeTag(_ number: Int32, _ wireType: WireType) {
        writeVarint(UInt64(number) << 3 | wireType.rawValue)
    }

    private mutating func writeVarint(_ value: UInt64) {
        var remaining = value
        while remaining >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: remaining) | 0x80)
            remaining >>= 7
        }
        bytes.append(UInt8(remaining))
    }

    private mutating func writeLittleEndian(_ value: UInt64, byteCount: Int) {
        for index in 0..<byteCount { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }
}
