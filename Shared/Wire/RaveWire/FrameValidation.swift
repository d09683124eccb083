extension Frame {
    /// Checks the rules every frame of its type must follow, independent of connection state.
    ///
    /// Connection-level frames (HANDSHAKE, PING, PONG, GOAWAY, ERROR) use stream 0; call frames (REQUEST,
    /// RESPONSE, CANCEL) use a non-zero stream id. CANCEL has no body, PING and PONG at most 64 bytes.
    public func validate() throws(WireError) {
        try Self.validate(type: type, streamID: streamID, bodyCount: body.count)
    }

    /// `validate()` for a frame known by its header (its body left in the decoder's buffer).
    public static func validate(_ header: FrameHeader) throws(WireError) {
        try validate(type: header.type, streamID: header.streamID, bodyCount: header.length - headerSize)
    }

    private static func validate(type: FrameType, streamID: UInt32, bodyCount: Int) throws(WireError) {
        switch type {
        case .handshake, .ping, .pong, .goAway, .error:
            guard streamID == 0 else {
                throw WireError(.invalidStreamID, "a \(type) frame must use stream 0, got stream \(streamID)")
            }
        case .request, .response, .cancel:
            guard streamID != 0 else {
                throw WireError(.invalidStreamID, "a \(type) frame needs a non-zero stream id")
            }
        }
        switch type {
        case .ping, .pong:
            guard bodyCount <= Frame.maxPingBodySize else {
                throw WireError(
                    .invalidBody, "a \(type) body must be at most \(Frame.maxPingBodySize) bytes, got \(bodyCount)")
            }
        case .cancel:
            guard bodyCount == 0 else {
                throw WireError(.invalidBody, "a cancel frame has no body, got \(bodyCount) bytes")
            }
        default:
            break
        }
    }
}
