/// Why a dynamic message, field path or JSON document was rejected; the one error type of RaveDynamic.
///
/// An open struct rather than an enum, so new kinds don't break callers that switch on `kind`.
public struct DynamicError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, coarsely: callers map kinds to status codes (all are INVALID_ARGUMENT but
    /// `unknownMethod`, which is UNIMPLEMENTED, and `invalidMessage` on a response, which is INTERNAL).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let description: String

        /// No method of that full name in the registry.
        public static let unknownMethod = Kind(description: "unknown method")
        /// No message type of that full name in the registry.
        public static let unknownMessage = Kind(description: "unknown message")
        /// A field path or JSON document names a field the message does not have.
        public static let unknownField = Kind(description: "unknown field")
        /// A value or path has the wrong type for its field.
        public static let typeMismatch = Kind(description: "type mismatch")
        /// A field path that does not parse or cannot be followed (repeated field without index, …).
        public static let invalidPath = Kind(description: "invalid field path")
        /// An index past the end of a repeated field.
        public static let indexOutOfRange = Kind(description: "index out of range")
        /// Text that is not JSON, or JSON whose shape does not fit the message.
        public static let invalidJSON = Kind(description: "invalid JSON")
        /// Bytes that are not a valid protobuf encoding of the message.
        public static let invalidMessage = Kind(description: "invalid message")
    }

    /// The class of failure.
    public var kind: Kind
    /// What was wrong and, where it helps, what is allowed.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
