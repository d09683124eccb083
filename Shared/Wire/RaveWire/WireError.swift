/// A violation of the framing rules: the connection cannot continue and is closed with an ERROR frame.
///
/// An open struct rather than an enum so new kinds of violation don't break callers that switch on `kind`.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of violation this is.
    public struct Kind: Hashable, Sendable {
        let name: String

        /// A declared length above the negotiated maximum.
        public static let frameTooLarge = Kind(name: "frame too large")
        /// A declared length below the 6-byte header.
        public static let frameTooShort = Kind(name: "frame too short")
        /// A frame type this protocol version does not define.
        public static let unknownFrameType = Kind(name: "unknown frame type")
        /// A frame on a stream id its type does not allow (a REQUEST on stream 0, a PING on stream 7).
        public static let invalidStreamID = Kind(name: "invalid stream id")
        /// A body that breaks its frame type's rules (a PING body over 64 bytes, a CANCEL with a body).
        public static let invalidBody = Kind(name: "invalid frame body")
    }

    public var kind: Kind
    /// What was wrong and what is allowed, for the ERROR frame and the log.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
