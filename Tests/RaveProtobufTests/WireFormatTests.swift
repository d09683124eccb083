import RaveMessages
import Testing

/// Encodings computed by hand from the protobuf wire-format specification.
@Suite struct WireFormatTests {
    @Test func defaultsAreNotEmitted() {
        #expect(RpcV1.Response().protobufBytes() == [])
        #expect(TestingV1.Scalars().protobufBytes() == [])
        #expect(TestingV1.Container(items: [], counters: [:]).protobufBytes() == [])
    }

    @Test func handshakeEncodesVarintsAndStrings() throws {
        let handshake = RpcV1.Handshake(protocolVersion: 1, maxFrameSize: 4_194_304, agent: "a")
        let wire: [UInt8] = [0x08, 0x01, 0x10, 0x80, 0x80, 0x80, 0x02, 0x22, 0x01, 0x61]
        #expect(handshake.protobufBytes() == wire)
        #expect(try RpcV1.Handshake(protobufBytes: wire) == handshake)
    }

    @Test func requestEncodesMapEntriesAndBytesWithZeros() throws {
        let request = RpcV1.Request(method: "m", timeoutMs: 150, metadata: ["k": "v"], payload: [0, 1, 0])
        let wire: [UInt8] = [
            0x0A, 0x01, 0x6D,  // method = "m"
            0x10, 0x96, 0x01,  // timeout_ms = 150
            0x1A, 0x06, 0x0A, 0x01, 0x6B, 0x12, 0x01, 0x76,  // metadata {key: "k", value: "v"}
            0x22, 0x03, 0x00, 0x01, 0x00,  // payload
        ]
        #expect(request.protobufBytes() == wire)
        #expect(try RpcV1.Request(protobufBytes: wire) == request)
    }

    @Test func signedAndFixedWidthScalarsUseTheirWireTypes() {
        #expect(TestingV1.Scalars(int32Value: -1).protobufBytes() == [0x18] + Array(repeating: 0xFF, count: 9) + [0x01])
        #expect(TestingV1.Scalars(sint32Value: -1).protobufBytes() == [0x38, 0x01])
        #expect(TestingV1.Scalars(sint64Value: -2).protobufBytes() == [0x40, 0x03])
        #expect(TestingV1.Scalars(fixed32Value: 1).protobufBytes() == [0x4D, 0x01, 0x00, 0x00, 0x00])
        #expect(TestingV1.Scalars(doubleValue: 1).protobufBytes() == [0x09, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F])
        #expect(TestingV1.Scalars(boolValue: true).protobufBytes() == [0x68, 0x01])
        #expect(TestingV1.Scalars(stringValue: "é").protobufBytes() == [0x72, 0x02, 0xC3, 0xA9])
    }

    @Test func repeatedScalarsArePacked() {
        #expect(TestingV1.Container(numbers: [1, 2, 300]).protobufBytes() == [0x22, 0x04, 0x01, 0x02, 0xAC, 0x02])
    }

    @Test func statusCodeEncodesItsGRPCNumber() {
        #expect(RpcV1.Response(code: .invalidArgument).protobufBytes() == [0x08, 0x03])
        #expect(RpcV1.Response(code: .unrecognized(99)).protobufBytes() == [0x08, 0x63])
    }
}
