import CProtobufC

/// Conversions from the structs protobuf-c unpacks into Swift values; used by generated code only.
public enum ProtoDecoding {
    /// A buffer start protobuf-c accepts even for empty input (it never reads past `count`).
    @inlinable
    public static func start(of bytes: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
        guard let base = bytes.baseAddress else { return emptyInput }
        return base.assumingMemoryBound(to: UInt8.self)
    }

    @usableFromInline nonisolated(unsafe) static let emptyInput: UnsafePointer<UInt8> = {
        // One static byte that is never written; a constant address needs no synchronization.
        let byte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        byte.initialize(to: 0)
        return UnsafePointer(byte)
    }()

    /// Unpacks `bytes` with protobuf-c, converts the C struct with `convert`, and frees it.
    ///
    /// protobuf-c rejects truncated input, malformed varints, wrong wire types and lengths past the end;
    /// all of those become a `ProtoDecodingError`. When the message has string fields (`checksStrings`, at
    /// any depth), a string holding U+0000 is refused too: protobuf-c would hand it over cut at the NUL.
    @inlinable
    public static func unpack<CMessage, Message>(
        _ bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        as type: CMessage.Type, messageName: String, checksStrings: Bool,
        _ convert: (UnsafePointer<CMessage>) throws(ProtoDecodingError) -> Message
    ) throws(ProtoDecodingError) -> Message {
        guard let message = protobuf_c_message_unpack(descriptor, nil, bytes.count, start(of: bytes)) else {
            throw ProtoDecodingError(messageName: messageName, reason: "\(bytes.count) bytes are not a valid encoding")
        }
        defer { protobuf_c_message_free_unpacked(message, nil) }
        if checksStrings { try refuseNUL(in: bytes, descriptor: descriptor, messageName: messageName) }
        return try convert(UnsafeRawPointer(message).assumingMemoryBound(to: CMessage.self))
    }

    /// Throws when a string field anywhere in `bytes` holds U+0000.
    @usableFromInline
    static func refuseNUL(
        in bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>, messageName: String
    ) throws(ProtoDecodingError) {
        guard let field = try ProtoStringFields.firstFieldHoldingNUL(in: bytes, descriptor: descriptor).get() else {
            return
        }
        throw ProtoDecodingError(
            messageName: messageName, reason: "field \(field) holds a NUL character (U+0000), which text may not hold")
    }

    /// A string field; protobuf-c does not check UTF-8, so invalid text is rejected here, as proto3 requires.
    @inlinable
    public static func string(
        _ pointer: UnsafePointer<CChar>?, field: String, of messageName: String
    ) throws(ProtoDecodingError) -> String {
        guard let pointer else { return "" }
        guard let string = String(validatingCString: pointer) else {
            throw ProtoDecodingError(messageName: messageName, reason: "field \(field) is not valid UTF-8")
        }
        return string
    }

    /// A bytes field.
    @inlinable
    public static func bytes(_ data: ProtobufCBinaryData) -> [UInt8] {
        guard data.len > 0, let start = data.data else { return [] }
        return [UInt8](UnsafeBufferPointer(start: start, count: data.len))
    }

    /// A repeated numeric field, whose Swift and C types are the same.
    @inlinable
    public static func array<Element>(_ start: UnsafeMutablePointer<Element>?, count: Int) -> [Element] {
        guard count > 0, let start else { return [] }
        return [Element](UnsafeBufferPointer(start: start, count: count))
    }

    /// A repeated field whose elements need converting (bool, enum, string, bytes, message).
    @inlinable
    public static func array<CElement, Element>(
        _ start: UnsafeMutablePointer<CElement>?, count: Int,
        _ convert: (CElement) throws(ProtoDecodingError) -> Element
    ) throws(ProtoDecodingError) -> [Element] {
        guard count > 0, let start else { return [] }
        var result: [Element] = []
        result.reserveCapacity(count)
        for index in 0..<count { result.append(try convert(start[index])) }
        return result
    }

    /// The elements of a repeated message or map field; protobuf-c never leaves one NULL.
    @inlinable
    public static func messages<CMessage, Element>(
        _ start: UnsafeMutablePointer<UnsafeMutablePointer<CMessage>?>?, count: Int,
        _ convert: (UnsafeMutablePointer<CMessage>) throws(ProtoDecodingError) -> Element
    ) throws(ProtoDecodingError) -> [Element] {
        guard count > 0, let start else { return [] }
        var result: [Element] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            if let message = start[index] { result.append(try convert(message)) }
        }
        return result
    }
}
