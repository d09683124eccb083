/// Cuts a byte stream into frames, however the bytes arrive (one at a time or many frames per read).
///
/// The decoder checks the length prefix and the frame type as soon as their 5 bytes are in: a length over
/// `maxFrameSize` or under the header size, or an unknown type, fails at once, before any body is buffered.
/// It only ever holds bytes that actually arrived, never a buffer sized from the declared length.
///
/// A value type confined to one connection; it is not safe to share between threads.
public struct FrameDecoder {
    /// The largest `length` accepted (header plus body).
    public var maxFrameSize: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0

    public init(maxFrameSize: Int = Frame.defaultMaxFrameSize) {
        self.maxFrameSize = maxFrameSize
    }

    /// Bytes received but not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Adds received bytes; call `nextFrame()` until it returns nil to take the complete frames out.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfWorthwhile()
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes from an array.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next complete frame, or nil when more bytes are needed.
    ///
    /// After it throws, the stream is unusable: the caller sends an ERROR frame and closes.
    public mutating func nextFrame() throws(WireError) -> Frame? {
        let available = buffer.count - readIndex
        guard available >= Frame.lengthPrefixSize else { return nil }
        let length = Int(readUInt32(at: readIndex))
        if length > maxFrameSize {
            throw WireError(.frameTooLarge, "frame length \(length) exceeds the maximum of \(maxFrameSize) bytes")
        }
        if length < Frame.headerSize {
            throw WireError(.frameTooShort, "frame length \(length) is below the header size of \(Frame.headerSize)")
        }
        guard available > Frame.lengthPrefixSize else { return nil }
        let typeByte = buffer[readIndex + Frame.lengthPrefixSize]
        guard let type = FrameType(rawValue: typeByte) else {
            throw WireError(.unknownFrameType, "frame type \(typeByte) is not defined by protocol version 1")
        }
        guard available >= Frame.lengthPrefixSize + length else { return nil }
        let flags = buffer[readIndex + 5]
        let streamID = readUInt32(at: readIndex + 6)
        let bodyStart = readIndex + Frame.lengthPrefixSize + Frame.headerSize
        let bodyEnd = readIndex + Frame.lengthPrefixSize + length
        let body = Array(buffer[bodyStart..<bodyEnd])
        readIndex = bodyEnd
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        }
        return Frame(type: type, flags: flags, streamID: streamID, body: body)
    }

    private func readUInt32(at index: Int) -> UInt32 {
        UInt32(buffer[index]) << 24 | UInt32(buffer[index + 1]) << 16 | UInt32(buffer[index + 2]) << 8
            | UInt32(buffer[index + 3])
    }

    /// Drops consumed bytes once they make up most of the buffer, so appends stay amortized O(n).
    private mutating func compactIfWorthwhile() {
        guard readIndex > 0, readIndex >= buffer.count / 2 else { return }
        buffer.removeSubrange(0..<readIndex)
        readIndex = 0
    }
}
