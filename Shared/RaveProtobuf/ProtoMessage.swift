/// A protobuf message as a Swift value; encoding and decoding go through protobuf-c.
///
/// Generated code (rave-protogen) conforms every message in Proto/ to this protocol.
public protocol ProtoMessage: Sendable, Equatable {
    /// The fully qualified message name ("rave.echo.v1.EchoRequest").
    static var protoMessageName: String { get }

    /// A message with every field at its default.
    init()

    /// Decodes the protobuf wire format.
    init(protobufBytes bytes: UnsafeRawBufferPointer) throws(ProtoDecodingError)

    /// Encodes the message in the protobuf wire format.
    func protobufBytes() -> [UInt8]
}

extension ProtoMessage {
    /// Decodes the protobuf wire format from an array.
    public init(protobufBytes bytes: [UInt8]) throws(ProtoDecodingError) {
        self = try bytes.withUnsafeBytes { (buffer) throws(ProtoDecodingError) -> Self in
            try Self(protobufBytes: buffer)
        }
    }
}

/// A protobuf enum as a Swift value; values this build does not know survive as `unrecognized`.
public protocol ProtoEnum: Sendable, Hashable {
    /// The value on the wire.
    var rawValue: Int32 { get }
    init(rawValue: Int32)
}

/// Bytes that do not decode as the expected message.
public struct ProtoDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The message type that was expected.
    public var messageName: String
    /// What was wrong.
    public var reason: String

    public init(messageName: String, reason: String) {
        self.messageName = messageName
        self.reason = reason
    }

    public var description: String { "not a valid \(messageName): \(reason)" }
}
