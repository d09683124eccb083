/// A minimal protobuf wire-format reader, enough to decode descriptor.proto messages.
///
/// The generator is a build tool that runs before protobuf-c bindings for descriptor.proto exist,
/// so it reads the descriptor set by hand; the services themselves never use this reader.
struct WireReader {
    /// One field as it appeared on the wire.
    enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case lengthDelimited(ArraySlice<UInt8>)
        case fixed32(UInt32)
    }

    private let bytes: ArraySlice<UInt8>
    private var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.position = bytes.startIndex
    }

    /// Calls `body` with each field's number and value, in wire order.
    static func forEachField(
        in bytes: ArraySlice<UInt8>, _ body: (Int, Value) throws -> Void
    ) throws {
        var reader = WireReader(bytes)
        while reader.position < bytes.endIndex {
            let key = try reader.readVarint()
            let number = Int(key >> 3)
            switch key & 7 {
            case 0: try body(number, .varint(try reader.readVarint()))
            case 1: try body(number, .fixed64(try reader.readFixed(8)))
            case 2:
                let length = Int(try reader.readVarint())
                guard length >= 0, length <= bytes.endIndex - reader.position else {
                    throw GeneratorError("length-delimited field \(number) runs past the end of its message")
                }
                try body(number, .lengthDelimited(bytes[reader.position..<reader.position + length]))
                reader.position += length
            case 5: try body(number, .fixed32(UInt32(try reader.readFixed(4))))
            default: throw GeneratorError("unsupported wire type \(key & 7) for field \(number)")
            }
        }
    }

    private mutating func readVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.endIndex, shift < 64 {
            let byte = bytes[position]
            position += 1
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
        throw GeneratorError("truncated or overlong varint")
    }

    private mutating func readFixed(_ size: Int) throws -> UInt64 {
        guard bytes.endIndex - position >= size else { throw GeneratorError("truncated fixed-width field") }
        var result: UInt64 = 0
        for index in 0..<size { result |= UInt64(bytes[position + index]) << (8 * UInt64(index)) }
        position += size
        return result
    }
}

extension WireReader.Value {
    var integer: Int {
        if case .varint(let value) = self { return Int(truncatingIfNeeded: value) }
        return 0
    }

    var string: String {
        if case .lengthDelimited(let slice) = self { return String(decoding: slice, as: UTF8.self) }
        return ""
    }

    var message: ArraySlice<UInt8> {
        if case .lengthDelimited(let slice) = self { return slice }
        return []
    }

    /// The integers of a repeated varint field, packed or not.
    var integers: [Int] {
        get throws {
            switch self {
            case .varint(let value): return [Int(truncatingIfNeeded: value)]
            case .lengthDelimited(let slice):
                var values: [Int] = []
                var reader = WireReader(slice)
                while reader.position < slice.endIndex {
                    values.append(Int(truncatingIfNeeded: try reader.readVarint()))
                }
                return values
            default: return []
            }
        }
    }
}

/// Why generation failed; printed by main before exiting with status 1.
struct GeneratorError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
