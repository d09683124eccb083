import RaveMessages
import RaveProtobuf
import Testing

@Suite struct DecodingErrorTests {
    @Test(
        arguments: [
            [0xFF],  // a key varint that never ends
            [0x0A, 0x05, 0x61],  // a string field longer than the input
            [0x0A],  // a key without its value
            [0x10, 0x80, 0x80],  // a truncated varint value
            [0x0F, 0x00],  // wire type 7 does not exist
            [0x0B, 0x00],  // a group start, not a proto3 field
            Array(repeating: 0xFF, count: 64),
        ] as [[UInt8]])
    func malformedInputThrows(wire: [UInt8]) {
        #expect(throws: ProtoDecodingError.self) { try RpcV1.Request(protobufBytes: wire) }
    }

    @Test func everyTruncationOfARichMessageFailsOrDecodesWithoutCrashing() {
        let bytes = SampleMessages.container.protobufBytes()
        var failures = 0
        for length in 0..<bytes.count {
            do {
                _ = try TestingV1.Container(protobufBytes: Array(bytes[..<length]))
            } catch {
                failures += 1
                #expect(error.messageName == "rave.testing.v1.Container")
            }
        }
        // A cut between two fields is a valid shorter message; most cuts land inside a field.
        #expect(failures > bytes.count / 2)
    }

    @Test func randomGarbageNeverCrashes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let garbage = (0..<Int.random(in: 1...64, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            _ = try? TestingV1.Container(protobufBytes: garbage)
        }
    }

    @Test func invalidUTF8InAStringFieldIsRejected() {
        // Field 1 (method) holds 0xFF 0xFE, which is not UTF-8.
        #expect(
            throws: ProtoDecodingError(messageName: "rave.rpc.v1.Request", reason: "field method is not valid UTF-8")
        ) {
            try RpcV1.Request(protobufBytes: [0x0A, 0x02, 0xFF, 0xFE])
        }
        #expect(throws: ProtoDecodingError.self) {
            try TestingV1.Container(protobufBytes: [0x2A, 0x01, 0xC3])  // names = ["\xC3"]
        }
    }

}
