/// A protobuf message as a Swift value; encoding and decoding go through protobuf-c.
///
/// Generated code (rave-protogen) conforms every message in Proto/ to this protocol.
///
/// protobuf-c keeps strings as NUL-terminated C strings; neither direction lets that cut a string short.
/// Encoding writes every string exactly, NULs included. Decoding refuses, with `ProtoDecodingError`, a string
/// field that holds a NUL or is not valid UTF-8 (our protocol's rule for text). Map fields encode in key
/// order, so equal messages always encode to the same bytes. Unknown fields are dropped.
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
    @inlinable
    public init(protobufBytes bytes: [UInt8]) throws(ProtoDecodingError) {
        // withUnsafeBytes only rethrows untyped errors, so the typed error travels in a Result.
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(ProtoDecodingError) -> Self in try Self(protobufBytes: buffer) }
        }
        self = try result.get()
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
