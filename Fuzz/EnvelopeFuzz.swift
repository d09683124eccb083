// libFuzzer entry point for the protobuf-c message decoders; scripts/fuzz.sh links it with RaveProtobuf,
// RaveMessages and the CRaveProto C code, all built with the same sanitizers.
import RaveMessages

/// One fuzz input: the bytes are decoded as every envelope message and every test message.
///
/// What decodes must re-encode to bytes that decode again to the same value and encode to the same bytes:
/// decoding never trusts a declared length, and re-encoding is stable. Messages with floating-point fields
/// are compared by their encoding only, since NaN is not equal to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func envelopeFuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    checkRoundTrip(RpcV1.Handshake.self, bytes)
    checkRoundTrip(RpcV1.Request.self, bytes)
    checkRoundTrip(RpcV1.Response.self, bytes)
    checkRoundTrip(RpcV1.GoAway.self, bytes)
    checkRoundTrip(RpcV1.ProtocolError.self, bytes)
    checkRoundTrip(RpcV1.Status.self, bytes)
    checkRoundTrip(EchoV1.EchoAfterDelayRequest.self, bytes)
    checkRoundTrip(TestingV1.Container.Item.self, bytes)
    checkRoundTrip(TestingV1.Scalars.self, bytes, comparingValues: false)
    checkRoundTrip(TestingV1.Container.self, bytes, comparingValues: false)
    return 0
}

/// Decodes `bytes` as `Message`; when that succeeds, checks that encoding is a stable fixed point.
private func checkRoundTrip<Message: ProtoMessage>(
    _ type: Message.Type, _ bytes: UnsafeRawBufferPointer, comparingValues: Bool = true
) {
    guard let decoded = try? Message(protobufBytes: bytes) else { return }
    let encoded = decoded.protobufBytes()
    let again: Message
    do {
        again = try Message(protobufBytes: encoded)
    } catch {
        preconditionFailure("\(Message.protoMessageName) does not decode its own encoding: \(error)")
    }
    precondition(!comparingValues || again == decoded, "\(Message.protoMessageName) changed in a round trip")
    precondition(again.protobufBytes() == encoded, "\(Message.protoMessageName) encodes differently the second time")
}
