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
    /// Fails when the walk meets malformed bytes. Bytes without any zero byte cannot hold a NUL and are not walked
    /// (most requests: proto3 leaves zeros out, and no tag or minimal varint ends in one), so pass bytes
    /// protobuf-c has accepted.
    public static func firstFieldHoldingNUL(
        in bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> Result<String?, ProtoDecodingError> {
        guard let base = bytes.baseAddress, memchr(base, 0, bytes.count) != nil else { return .success(nil) }
        var finder = NULFinder(bytes: bytes)
        guard walk(bytes, 0..<bytes.count, descriptor: descriptor, depth: 0, visitor: &finder) else {
            let name = String(cString: descriptor.pointee.name)
            return .failure(
                ProtoDecodingError(messageName: name, reason: "\(bytes.count) bytes are not a valid encoding"))
        }
        guard finder.found else { return .success(nil) }
        // Rare, so the field's path is found by a second walk that keeps track of it.
        var named = NULFinder(bytes: bytes, namesThePath: true)
        _ = walk(bytes, 0..<bytes.count, descriptor: descriptor, depth: 0, visitor: &named)
        return .success(named.path.map { String(cString: $0.pointee.name) }.joined(separator: "."))
    }

    /// Turns every `nulStandIn` inside a string field of `bytes` back into U+0000.
    public static func restoreNULs(in bytes: inout [UInt8], descriptor: UnsafePointer<ProtobufCMessageDescriptor>) {
        bytes.withUnsafeMutableBytes { buffer in
            var restorer = NULRestorer(bytes: buffer)
            _ = walk(
                UnsafeRawBufferPointer(buffer), 0..<buffer.count, descriptor: descriptor, depth: 0, visitor: &restorer)
        }
    }

    // MARK: - The walk

    /// What a walk does at each string field, and when it enters and leaves a nested message.
    ///
    /// A generic parameter rather than a closure: every decode of a message with strings walks its bytes, and a
    /// specialized walk calls no closure and allocates nothing.
    private protocol Visitor {
        /// Returns false to stop the walk.
        mutating func visitString(_ content: Range<Int>, field: UnsafePointer<ProtobufCFieldDescriptor>) -> Bool
        mutating func enter(_ field: UnsafePointer<ProtobufCFieldDescriptor>)
        mutating func leave()
    }

    /// Stops at the first string holding a NUL; with `namesThePath`, `path` then lists the fields leading to it.
    private struct NULFinder: Visitor {
        let bytes: UnsafeRawBufferPointer
        var namesThePath = false
        var found = false
        var path: [UnsafePointer<ProtobufCFieldDescriptor>] = []

        mutating func visitString(_ content: Range<Int>, field: UnsafePointer<ProtobufCFieldDescriptor>) -> Bool {
            guard memchr(bytes.baseAddress! + content.lowerBound, 0, content.count) != nil else { return true }
            found = true
            if namesThePath { path.append(field) }
            return false
        }

        mutating func enter(_ field: UnsafePointer<ProtobufCFieldDescriptor>) {
            if namesThePath { path.append(field) }
        }

        mutating func leave() {
            if namesThePath { path.removeLast() }
        }
    }

    /// Puts NULs back where the arena stood in for them.
    private struct NULRestorer: Visitor {
        let bytes: UnsafeMutableRawBufferPointer

        mutating func visitString(_ content: Range<Int>, field: UnsafePointer<ProtobufCFieldDescriptor>) -> Bool {
            for index in content where bytes[index] == nulStandIn { bytes[index] = 0 }
            return true
        }

        mutating func enter(_ field: UnsafePointer<ProtobufCFieldDescriptor>) {}
        mutating func leave() {}
    }

    /// Shows `visitor` each string field's content in `range`, nested messages included.
    ///
    /// Returns false when the bytes are malformed, true otherwise (stopped by the visitor or not); after a stop,
    /// `leave` is not called for the messages still open.
    private static func walk<V: Visitor>(
        _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        depth: Int, visitor: inout V
    ) -> Bool {
        walkFields(bytes, range, descriptor: descriptor, depth: depth, visitor: &visitor) != .malformed
    }

    private enum Outcome {
        case finished
        case stopped
        case malformed
    }

    private static func walkFields<V: Visitor>(
        _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        depth: Int, visitor: inout V
    ) -> Outcome {
        guard depth < maximumDepth else { return .malformed }
        var index = range.lowerBound
        while index < range.upperBound {
            guard let tag = readVarint(bytes, &index, end: range.upperBound) else { return .malformed }
            switch tag & 7 {
            case 0:
                guard readVarint(bytes, &index, end: range.upperBound) != nil else { return .malformed }
            case 1, 5:
                let size = tag & 7 == 1 ? 8 : 4
                guard range.upperBound - index >= size else { return .malformed }
                index += size
            case 2:
                guard let length = readVarint(bytes, &index, end: range.upperBound),
                    length <= UInt64(range.upperBound - index)
                else { return .malformed }
                let content = index..<index + Int(length)
                index = content.upperBound
                guard tag >> 3 <= UInt64(UInt32.max),
                    let field = protobuf_c_message_descriptor_get_field(descriptor, UInt32(tag >> 3))
                else { continue }
                switch field.pointee.type {
                case PROTOBUF_C_TYPE_STRING:
                    if !visitor.visitString(content, field: field) { return .stopped }
                case PROTOBUF_C_TYPE_MESSAGE:
                    let nested = field.pointee.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
                    visitor.enter(field)
                    let outcome = walkFields(bytes, content, descriptor: nested, depth: depth + 1, visitor: &visitor)
                    if outcome != .finished { return outcome }
                    visitor.leave()
                default:
                    continue
                }
            default:
                return .malformed  // groups (3, 4) and the unused wire types 6 and 7
            }
        }
        return .finished
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
