/// The fixed part of a frame: what a receiver knows once the first 10 bytes are in, before the body.
public struct FrameHeader: Hashable, Sendable {
    /// The `length` field: header (6 bytes) plus body.
    public var length: Int
    public var type: FrameType
    public var flags: UInt8
    public var streamID: UInt32

    /// Bytes the whole frame occupies on the wire, length prefix included.
    public var wireSize: Int { Frame.lengthPrefixSize + length }
}

/// Cuts a byte stream into frames, however the bytes arrive (one at a time or many frames per read).
///
/// The decoder checks the length prefix and the frame type as soon as their 5 bytes are in: a length over
/// `maxFrameSize` or under the header size, or an unknown type, fails at once, before any body is buffered.
/// It only ever holds bytes that actually arrived, never a buffer sized from the declared length.
///
/// A receiver that budgets memory asks `next(admitting:)` instead of `nextFrame()`: every frame longer than
/// `admissionThreshold` is then shown to it by its header first, and a frame it refuses is skipped — its body
/// bytes are dropped as they arrive, never buffered — and reported as `.refused`.
///
/// A value type confined to one connection; it is not safe to share between threads.
public struct FrameDecoder {
    /// What `next(admitting:)` found.
    public enum Decoded: Hashable, Sendable {
        /// A complete frame.
        case frame(Frame)
        /// A frame the admission check refused; its body is skipped.
        case refused(FrameHeader)
    }

    /// The largest `length` accepted (header plus body).
    public var maxFrameSize: Int
    /// Frames up to this `length` are buffered without asking; longer ones are shown to the admission check.
    public var admissionThreshold: Int
    @usableFromInline var buffer: [UInt8] = []
    @usableFromInline var readIndex = 0
    /// Whether the frame starting at `readIndex` was already admitted (its header was shown and accepted).
    private var admittedCurrentFrame = false
    /// Body bytes of a refused frame still to come; `append` drops them.
    private var skipRemaining = 0
    /// The wire size of the frame `nextHeader` returned last, still in the buffer for `withBody`.
    @usableFromInline var currentFrameSize = 0

    /// Buffer capacity kept between frames; a larger buffer (left by a large frame) is released once empty.
    public static let retainedCapacity = 128 << 10

    public init(maxFrameSize: Int = Frame.defaultMaxFrameSize, admissionThreshold: Int = .max) {
        self.maxFrameSize = maxFrameSize
        self.admissionThreshold = admissionThreshold
    }

    /// Bytes received but not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - readIndex - currentFrameSize }

    /// Whether a frame has begun to arrive and is not complete yet (bytes buffered, or a refused frame's body
    /// still to be skipped).
    public var hasPartialFrame: Bool { bufferedByteCount > 0 || skipRemaining > 0 }

    /// Bytes of memory the decoder's buffer holds (its capacity), for tests of what a connection retains.
    public var bufferCapacity: Int { buffer.capacity }

    /// Adds received bytes; call `nextFrame()` until it returns nil to take the complete frames out.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if currentFrameSize > 0 {
            consume(currentFrameSize)
            currentFrameSize = 0
        }
        var bytes = bytes
        if skipRemaining > 0 {
            let skipped = min(skipRemaining, bytes.count)
            skipRemaining -= skipped
            bytes = UnsafeRawBufferPointer(rebasing: bytes[skipped...])
        }
        guard !bytes.isEmpty else { return }
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
        switch try next(admitting: { _ in true }) {
        case .frame(let frame): frame
        case .refused, nil: nil
        }
    }

    /// The next complete or refused frame, or nil when more bytes are needed.
    ///
    /// `admit` sees the header of every frame longer than `admissionThreshold`, once, as soon as its 10 header
    /// bytes are in; returning false skips the frame. After it throws, the stream is unusable.
    public mutating func next(admitting admit: (FrameHeader) -> Bool) throws(WireError) -> Decoded? {
        switch try nextHeader(admitting: admit) {
        case .frame(let header)?:
            let body = withBody { Array($0) }
            consume(currentFrameSize)
            currentFrameSize = 0
            return .frame(Frame(type: header.type, flags: header.flags, streamID: header.streamID, body: body))
        case .refused(let header)?: return .refused(header)
        case nil: return nil
        }
    }

    /// What `nextHeader(admitting:)` found.
    public enum DecodedHeader: Hashable, Sendable {
        /// A complete frame, whose body `withBody` lends until the decoder is used again.
        case frame(FrameHeader)
        /// A frame the admission check refused; its body is skipped.
        case refused(FrameHeader)
    }

    /// Like `next(admitting:)`, without copying the body: after `.frame`, `withBody` reads it in place, until the
    /// next call of `append`, `next…` or `nextHeader`.
    public mutating func nextHeader(admitting admit: (FrameHeader) -> Bool) throws(WireError) -> DecodedHeader? {
        if currentFrameSize > 0 {
            consume(currentFrameSize)
            currentFrameSize = 0
        }
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
        guard available >= Frame.lengthPrefixSize + Frame.headerSize else { return nil }
        let flags = buffer[readIndex + 5]
        let streamID = readUInt32(at: readIndex + 6)
        let wireSize = Frame.lengthPrefixSize + length
        let header = FrameHeader(length: length, type: type, flags: flags, streamID: streamID)
        if length > admissionThreshold && !admittedCurrentFrame {
            guard admit(header) else {
                let buffered = min(available, wireSize)
                skipRemaining = wireSize - buffered
                consume(buffered)
                return .refused(header)
            }
            admittedCurrentFrame = true
        }
        guard available >= wireSize else { return nil }
        // Consumed on the next use of the decoder, so the body stays in place for `withBody` until then.
        currentFrameSize = wireSize
        return .frame(header)
    }

    /// Calls `body` with the body of the frame `nextHeader(admitting:)` returned last (empty when there is none).
    ///
    /// Inlinable: the server reads every request through it, and a generic call across modules would go through
    /// type metadata for each.
    @inlinable
    public func withBody<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        buffer.withUnsafeBytes { all in
            guard currentFrameSize > 0 else { return body(UnsafeRawBufferPointer(rebasing: all[0..<0])) }
            let start = readIndex + Frame.lengthPrefixSize + Frame.headerSize
            return body(UnsafeRawBufferPointer(rebasing: all[start..<readIndex + currentFrameSize]))
        }
    }

    /// Drops `count` bytes from the front: the frame at `readIndex` is done with.
    private mutating func consume(_ count: Int) {
        readIndex += count
        admittedCurrentFrame = false
        guard readIndex == buffer.count else { return }
        if buffer.capacity > Self.retainedCapacity {
            // A large frame grew the buffer: give that memory back rather than keep it for the connection's life.
            buffer = []
        } else {
            buffer.removeAll(keepingCapacity: true)
        }
        readIndex = 0
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
