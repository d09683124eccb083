extension Frame {
    /// The frame as bytes on the wire: length prefix, header, body.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Frame.lengthPrefixSize + Frame.headerSize + body.count)
        append(to: &bytes)
        return bytes
    }

    /// Appends the frame's wire bytes to `buffer`.
    public func append(to buffer: inout [UInt8]) {
        Frame.appendHeader(type: type, flags: flags, streamID: streamID, bodyCount: body.count, to: &buffer)
        buffer.append(contentsOf: body)
    }

    /// Appends a length prefix and header for a body of `bodyCount` bytes the caller appends next.
    ///
    /// Lets a writer put an encoded message straight after the header without building a `Frame` first. The ten
    /// bytes go in with one append (inlined into the caller), not ten: every response and request writes one.
    @inlinable
    public static func appendHeader(
        type: FrameType, flags: UInt8 = 0, streamID: UInt32, bodyCount: Int, to buffer: inout [UInt8]
    ) {
        let length = UInt32(headerSize + bodyCount)
        let header: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (
            UInt8(truncatingIfNeeded: length >> 24), UInt8(truncatingIfNeeded: length >> 16),
            UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length), type.rawValue, flags,
            UInt8(truncatingIfNeeded: streamID >> 24), UInt8(truncatingIfNeeded: streamID >> 16),
            UInt8(truncatingIfNeeded: streamID >> 8), UInt8(truncatingIfNeeded: streamID)
        )
        withUnsafeBytes(of: header) { buffer.append(contentsOf: $0) }
    }

    /// The total wire size of a frame with a body of `bodyCount` bytes.
    public static func wireSize(bodyCount: Int) -> Int { lengthPrefixSize + headerSize + bodyCount }
}
