import RaveMessages
import RaveWire
import Testing

@testable import RaveRPC

/// The hand-written envelope codec against the generated messages: both must read what the other writes.
@Suite("Envelope codec")
struct EnvelopeCodecTests {
    /// The body of the single frame in `bytes`.
    private func body(of bytes: [UInt8]) throws -> [UInt8] {
        var decoder = FrameDecoder()
        decoder.append(bytes)
        let frame = try #require(try decoder.nextFrame())
        #expect(decoder.bufferedByteCount == 0)
        return frame.body
    }

    @Test func requestsEncodedByHandDecodeAsTheGeneratedMessage() throws {
        var output: [UInt8] = []
        var forwarded = EncodedMetadata()
        forwarded.append(key: "rave-caller-user-id", value: "user-1")
        forwarded.append(key: "trace-id", value: "from the encoded part")
        EnvelopeCodec.appendRequest(
            streamID: 7, method: "rave.echo.v1.Echo/Echo", timeoutMs: 1500,
            metadata: ["trace-id": "t-1", "idempotency-key": "k-ü"], encodedMetadata: forwarded,
            payload: Array(repeating: 9, count: 300), to: &output)
        let request = try RpcV1.Request(protobufBytes: try body(of: output))
        #expect(request.method == "rave.echo.v1.Echo/Echo")
        #expect(request.timeoutMs == 1500)
        #expect(
            request.metadata == [
                "trace-id": "from the encoded part", "idempotency-key": "k-ü", "rave-caller-user-id": "user-1",
            ])
        #expect(request.payload == Array(repeating: 9, count: 300))
    }

    @Test func generatedRequestsDecodeByHandWithTheirMetadataBytes() throws {
        let metadata = ["authorization": "Bearer abc", "trace-id": "t-2", "empty": ""]
        let encoded = RpcV1.Request(method: "m/x", timeoutMs: 0, metadata: metadata, payload: []).protobufBytes()
        let request = try EnvelopeCodec.decodeRequest(encoded).get()
        #expect(request.method == "m/x" && request.timeoutMs == 0 && request.payload.isEmpty)
        #expect(request.metadata == metadata)
        #expect(request.encodedMetadata.dictionary == metadata)
    }

    /// Well-known keys decode to shared strings; they must read exactly as any other key, next to keys that only
    /// share their prefix, and a key that is not UTF-8 is still refused.
    @Test func wellKnownMetadataKeysDecodeLikeAnyOther() throws {
        let metadata = [
            MetadataKey.callerUserID: "0123456789abcdef0123456789abcdef", MetadataKey.callerAppID: "app",
            MetadataKey.callerScopes: "player authenticated", MetadataKey.callerSessionID: "s",
            MetadataKey.traceID: "t", MetadataKey.idempotencyKey: "k", MetadataKey.authorization: "Bearer x",
            "rave-caller": "prefix", "rave-caller-user-id-2": "longer", "": "empty key",
        ]
        let encoded = RpcV1.Request(method: "m/x", timeoutMs: 0, metadata: metadata, payload: []).protobufBytes()
        #expect(try EnvelopeCodec.decodeRequest(encoded).get().metadata == metadata)
        // One entry whose key is two bytes that are not UTF-8.
        let invalidKey: [UInt8] = [0x0A, 0x01, 0x61, 0x1A, 0x04, 0x0A, 0x02, 0xC3, 0x28]
        guard case .failure = EnvelopeCodec.decodeRequest(invalidKey) else {
            Issue.record("a key that is not UTF-8 decoded")
            return
        }
    }

    @Test func malformedRequestsAreRefused() {
        let cases: [[UInt8]] = [
            [0x0A, 0x05, 0x61],  // a method longer than the bytes
            [0x0A, 0x02, 0xC3, 0x28],  // a method that is not UTF-8
            [0x10, 0xFF],  // a varint cut off
            [0x1A, 0x04, 0x0A, 0x09, 0x61, 0x62],  // a metadata key longer than its entry
            [0x03],  // a group wire type
        ]
        for bytes in cases {
            guard case .failure = EnvelopeCodec.decodeRequest(bytes) else {
                Issue.record("\(bytes) decoded")
                continue
            }
        }
    }

    /// A NUL in the method or in a metadata key or value is refused, never cut short or passed on.
    @Test func nulCharactersInEnvelopeTextAreRefused() throws {
        let cases: [(String, RpcV1.Request)] = [
            ("method", RpcV1.Request(method: "rave.echo.v1.Echo/Echo\u{0}x")),
            ("metadata key", RpcV1.Request(method: "m/x", metadata: ["trace\u{0}id": "t"])),
            ("metadata value", RpcV1.Request(method: "m/x", metadata: ["idempotency-key": "key\u{0}tail"])),
            ("metadata value", RpcV1.Request(method: "m/x", metadata: ["idempotency-key": "ü\u{0}"])),
        ]
        for (field, request) in cases {
            guard case .failure(let error) = EnvelopeCodec.decodeRequest(request.protobufBytes()) else {
                Issue.record("\(request) decoded")
                continue
            }
            #expect(error.message == "field \(field) is not valid UTF-8 text without NUL characters")
        }
    }

    @Test func unknownFieldsAreSkipped() throws {
        // method "a", an unknown fixed32 field 9, an unknown length-delimited field 10, then the payload.
        let bytes: [UInt8] = [0x0A, 0x01, 0x61, 0x4D, 1, 2, 3, 4, 0x52, 0x01, 0x00, 0x22, 0x01, 0x07]
        let request = try EnvelopeCodec.decodeRequest(bytes).get()
        #expect(request.method == "a" && request.payload == [7])
    }

    @Test func responsesRoundTripBothWays() throws {
        var output: [UInt8] = []
        EnvelopeCodec.appendResponse(
            streamID: 3, code: .unavailable, message: "down", details: [1, 2], notProcessed: true, payload: [],
            to: &output)
        let generated = try RpcV1.Response(protobufBytes: try body(of: output))
        #expect(generated == RpcV1.Response(code: .unavailable, message: "down", details: [1, 2], notProcessed: true))
        #expect(
            EnvelopeCodec.decodeResponse(generated.protobufBytes())
                == .failure(RPCError(.unavailable, "down", details: [1, 2], notProcessed: true)))

        output.removeAll()
        EnvelopeCodec.appendResponse(
            streamID: 3, code: .ok, message: "", details: [], notProcessed: false, payload: [5, 6], to: &output)
        #expect(try RpcV1.Response(protobufBytes: try body(of: output)).payload == [5, 6])
        #expect(EnvelopeCodec.decodeResponse(RpcV1.Response(code: .ok, payload: [8]).protobufBytes()) == .success([8]))
        let unknown = EnvelopeCodec.decodeResponse(RpcV1.Response(code: .unrecognized(-3)).protobufBytes())
        #expect((try? unknown.get()) == nil)
    }

    @Test func replacingDropsTheNamedKeysAndAppendsTheNewEntries() {
        let incoming = EncodedMetadata([
            "authorization": "Bearer x", "rave-caller-user-id": "forged", "trace-id": "t", "idempotency-key": "k",
        ])
        let forwarded = incoming.replacing(
            MetadataKeys(["authorization", "rave-caller-user-id", "rave-client-address"]),
            with: [("rave-caller-user-id", "user-1"), ("rave-client-address", "127.0.0.1")])
        #expect(
            forwarded.dictionary == [
                "trace-id": "t", "idempotency-key": "k", "rave-caller-user-id": "user-1",
                "rave-client-address": "127.0.0.1",
            ])
        #expect(EncodedMetadata().replacing(MetadataKeys([]), with: []).isEmpty)
    }
}
