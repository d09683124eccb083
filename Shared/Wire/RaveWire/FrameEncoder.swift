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
    /// Lets a writer put an encoded message straight after the header without building a `Frame` first.
    public static func appendHeader(
        type: FrameType, flags: UInt8 = 0, streamID: UInt32, bodyCount: Int, to buffer: inout [UInt8]
    ) {
        let length = UInt32(headerSize + bodyCount)
        appendUInt32(length, to: &buffer)
        buffer.append(type.rawValue)
        buffer.append(flags)
        appendUInt32(streamID, to: &buffer)
    }

    /// The total wire size of a frame with a body of `bodyCount` bytes.
    public static func wireSize(bodyCount: Int) -> Int { lengthPrefixSize + headerSize + bodyCount }

    private static func appendUInt32(_ value: UInt32, to buffer: inout [UInt8]) {
        buffer.append(UInt8(truncatingIfNeeded: value >> 24))
        buffer.append(UInt8(truncatingIfNeeded: value >> 16))
        buffer.append(UInt8(truncatingIfNeeded: value >> 8))
        buffer.append(UInt8(truncatingIfNeeded: value))
    }
}
