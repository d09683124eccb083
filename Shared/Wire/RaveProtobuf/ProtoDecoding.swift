import CProtobufC
import Glibc

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
    ///
    /// The C struct and what it points to are built in scratch memory on the stack (`ScratchAllocator`), so a
    /// typical request costs no malloc and no free; what does not fit there comes from malloc and is freed.
    @inlinable
    public static func unpack<CMessage, Message>(
        _ bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        as type: CMessage.Type, messageName: String, checksStrings: Bool,
        _ convert: (UnsafePointer<CMessage>) throws(ProtoDecodingError) -> Message
    ) throws(ProtoDecodingError) -> Message {
        try withUnsafeTemporaryAllocation(
            byteCount: ScratchAllocator.byteCount, alignment: ScratchAllocator.alignment
        ) { scratch throws(ProtoDecodingError) -> Message in
            var allocator = ScratchAllocator.start(in: scratch)
            guard let message = protobuf_c_message_unpack(descriptor, &allocator, bytes.count, start(of: bytes))
            else {
                throw ProtoDecodingError(
                    messageName: messageName, reason: "\(bytes.count) bytes are not a valid encoding")
            }
            defer {
                // Memory from the scratch space goes with it; only an unpack that overflowed it has more to free.
                if ScratchAllocator.overflowed(scratch) { protobuf_c_message_free_unpacked(message, &allocator) }
            }
            if checksStrings { try refuseNUL(in: bytes, descriptor: descriptor, messageName: messageName) }
            return try convert(UnsafeRawPointer(message).assumingMemoryBound(to: CMessage.self))
        }
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

/// A protobuf-c allocator over scratch memory the caller provides (on the stack): allocations are carved from it
/// in order, and freeing them does nothing; once it is full, allocations come from malloc and are freed to it.
///
/// The scratch space starts with the allocator's state (`State`), then the memory it hands out.
@usableFromInline
enum ScratchAllocator {
    @usableFromInline static let byteCount = 1024
    @usableFromInline static let alignment = 16

    struct State {
        /// Where the next allocation starts, from the start of the scratch space.
        var offset: Int
        /// Whether an allocation came from malloc.
        var overflowed: Bool
    }

    /// Where allocations start in the scratch space: after the state, aligned as malloc aligns.
    private static let firstOffset = (MemoryLayout<State>.size + alignment - 1) & ~(alignment - 1)

    /// An allocator over `scratch` (`byteCount` bytes aligned to `alignment`), its state reset.
    @usableFromInline
    static func start(in scratch: UnsafeMutableRawBufferPointer) -> ProtobufCAllocator {
        let base = scratch.baseAddress!
        base.initializeMemory(as: State.self, repeating: State(offset: firstOffset, overflowed: false), count: 1)
        return ProtobufCAllocator(alloc: allocate, free: free, allocator_data: base)
    }

    /// Whether any allocation from the allocator over `scratch` came from malloc.
    @usableFromInline
    static func overflowed(_ scratch: UnsafeMutableRawBufferPointer) -> Bool {
        scratch.baseAddress!.load(as: State.self).overflowed
    }

    private static let allocate: @convention(c) (UnsafeMutableRawPointer?, Int) -> UnsafeMutableRawPointer? = {
        data, size in
        let state = data!.assumingMemoryBound(to: State.self)
        let rounded = (size + ScratchAllocator.alignment - 1) & ~(ScratchAllocator.alignment - 1)
        let offset = state.pointee.offset
        if rounded <= ScratchAllocator.byteCount - offset {
            state.pointee.offset = offset + rounded
            return data! + offset
        }
        state.pointee.overflowed = true
        return malloc(max(size, 1))
    }

    private static let free: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = {
        data, pointer in
        guard let data, let pointer else { return }
        if pointer >= data && pointer < data + ScratchAllocator.byteCount { return }
        Glibc.free(pointer)
    }
}
