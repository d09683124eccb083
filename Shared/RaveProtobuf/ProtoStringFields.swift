import CProtobufC
import Glibc

/// Walks protobuf wire bytes to the content of every string field, nested messages and map entries included,
/// guided by protobuf-c's runtime descriptors.
///
/// protobuf-c keeps a string as a NUL-terminated C string, so U+0000 inside a string field cannot survive its
/// structs: on decoding the text after the NUL would vanish, on encoding `strlen` would cut it off. Both
/// directions use this walk on the wire bytes instead, where a string's length is exact: decoding refuses a NUL
/// (`firstFieldHoldingNUL`), encoding restores the NULs it had to stand in for (`restoreNULs`).
///
/// The bytes walked are always ones protobuf-c accepted or produced; the walk still checks every length, and
/// stops at anything malformed.
public enum ProtoStringFields {
    /// The byte that stands in for U+0000 while protobuf-c packs a string: 0xFF never occurs in UTF-8, so inside
    /// a string field it can only be a stand-in.
    public static let nulStandIn: UInt8 = 0xFF

    /// Nesting deeper than this is refused; our messages are not recursive, so only hostile input gets near it.
    static let maximumDepth = 64

    /// The dotted path ("items.name") of the first string field in `bytes` holding a NUL byte, if any.
    ///
    /// Fails when the bytes are not a well-formed encoding.
    public static func firstFieldHoldingNUL(
        in bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> Result<String?, ProtoDecodingError> {
        var found: String?
        var path: [UnsafePointer<ProtobufCFieldDescriptor>] = []
        let walked = walk(bytes, 0..<bytes.count, descriptor: descriptor, path: &path, depth: 0) { range, path in
            guard memchr(bytes.baseAddress! + range.lowerBound, 0, range.count) != nil else { return true }
            found = path.map { String(cString: $0.pointee.name) }.joined(separator: ".")
            return false
        }
        guard walked else {
            let name = String(cString: descriptor.pointee.name)
            return .failure(
                ProtoDecodingError(messageName: name, reason: "\(bytes.count) bytes are not a valid encoding"))
        }
        return .success(found)
    }

    /// Turns every `nulStandIn` inside a string field of `bytes` back into U+0000.
    public static func restoreNULs(in bytes: inout [UInt8], descriptor: UnsafePointer<ProtobufCMessageDescriptor>) {
        var path: [UnsafePointer<ProtobufCFieldDescriptor>] = []
        bytes.withUnsafeMutableBytes { buffer in
            let whole = 0..<buffer.count
            _ = walk(UnsafeRawBufferPointer(buffer), whole, descriptor: descriptor, path: &path, depth: 0) { range, _ in
                for index in range where buffer[index] == nulStandIn { buffer[index] = 0 }
                return true
            }
        }
    }

    // MARK: - The walk

    /// Calls `visit` with the range of each string field's content and the fields leading to it.
    ///
    /// The path lists the outermost field first; `visit` returns false to stop. Returns false when the bytes are
    /// malformed, true otherwise (stopped or not).
    private static func walk(
        _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        path: inout [UnsafePointer<ProtobufCFieldDescriptor>], depth: Int,
        visit: (Range<Int>, [UnsafePointer<ProtobufCFieldDescriptor>]) -> Bool
    ) -> Bool {
        guard depth < maximumDepth else { return false }
        var index = range.lowerBound
        while index < range.upperBound {
            guard let tag = readVarint(bytes, &index, end: range.upperBound) else { return false }
            switch tag & 7 {
            case 0:
                guard readVarint(bytes, &index, end: range.upperBound) != nil else { return false }
            case 1, 5:
                let size = tag & 7 == 1 ? 8 : 4
                guard range.upperBound - index >= size else { return false }
                index += size
            case 2:
                guard let length = readVarint(bytes, &index, end: range.upperBound),
                    length <= UInt64(range.upperBound - index)
                else { return false }
                let content = index..<index + Int(length)
                index = content.upperBound
                guard tag >> 3 <= UInt64(UInt32.max),
                    let field = protobuf_c_message_descriptor_get_field(descriptor, UInt32(tag >> 3))
                else { continue }
                switch field.pointee.type {
                case PROTOBUF_C_TYPE_STRING:
                    path.append(field)
                    defer { path.removeLast() }
                    if !visit(content, path) { return true }
                case PROTOBUF_C_TYPE_MESSAGE:
                    let nested = field.pointee.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
                    path.append(field)
                    defer { path.removeLast() }
                    var stopped = false
                    let walked = walk(bytes, content, descriptor: nested, path: &path, depth: depth + 1) {
                        range, path in
                        stopped = !visit(range, path)
                        return !stopped
                    }
                    if !walked { return false }
                    if stopped { return true }
                default:
                    continue
                }
            default:
                return false  // groups (3, 4) and the unused wire types 6 and 7
            }
        }
        return true
    }

    private static func readVarint(_ bytes: UnsafeRawBufferPointer, _ index: inout Int, end: Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < end, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}
