/// The kinds of frame the protocol defines (docs/PROTOCOL.md, "Frame types").
public enum FrameType: UInt8, Sendable, CaseIterable {
    /// First frame of each side: protocol version and limits (body: rave.rpc.v1.Handshake).
    case handshake = 1
    /// A call (body: rave.rpc.v1.Request).
    case request = 2
    /// The answer to a call (body: rave.rpc.v1.Response).
    case response = 3
    /// The client gives up on a call; the server stops it and answers CANCELLED (empty body).
    case cancel = 4
    /// Liveness probe with an opaque body of up to 64 bytes, answered by PONG with the same body.
    case ping = 5
    /// The answer to a PING, carrying the PING's body.
    case pong = 6
    /// Graceful drain (body: rave.rpc.v1.GoAway).
    case goAway = 7
    /// Fatal connection error, sent right before closing (body: rave.rpc.v1.ProtocolError).
    case error = 8
}

/// One frame: `length:u32be | type:u8 | flags:u8 | stream_id:u32be | body`.
///
/// `length` counts the header after it (6 bytes) plus the body.
public struct Frame: Hashable, Sendable {
    /// What the frame carries; decides how `body` is read.
    public var type: FrameType
    /// Reserved: senders write 0, receivers ignore it.
    public var flags: UInt8
    /// The call the frame belongs to, or 0 for connection-level frames.
    public var streamID: UInt32
    /// The encoded body message (see `FrameType`).
    public var body: [UInt8]

    public init(type: FrameType, flags: UInt8 = 0, streamID: UInt32, body: [UInt8] = []) {
        self.type = type
        self.flags = flags
        self.streamID = streamID
        self.body = body
    }

    /// Bytes of the length prefix.
    public static let lengthPrefixSize = 4
    /// Bytes of type, flags and stream id, counted by the length prefix.
    public static let headerSize = 6
    /// The protocol version this build speaks.
    public static let protocolVersion: UInt32 = 1
    /// Default maximum of `length` (4 MiB).
    public static let defaultMaxFrameSize = 4 * 1024 * 1024
    /// Largest PING body.
    public static let maxPingBodySize = 64
}
