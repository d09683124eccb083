import RaveMessages
import RaveProtobuf
import Testing

/// Generated messages decode through protobuf-c into scratch memory on the stack (`ProtoDecoding.unpack`), and
/// from malloc once a message does not fit there: on both sides of that line a message decodes to what was
/// encoded, and bad bytes are refused.
@Suite("Decoding into scratch memory")
struct ScratchDecodingTests {
    /// A request of about `size` bytes: a map and a payload, so the C struct points to many allocations.
    private func request(size: Int, seed: Int) -> RpcV1.Request {
        var metadata: [String: String] = [:]
        for index in 0..<(size / 200) { metadata["key-\(seed)-\(index)"] = String(repeating: "v", count: index % 40) }
        return RpcV1.Request(
            method: "rave.test.v1.Service/Method\(seed)", timeoutMs: UInt32(seed),
            metadata: metadata, payload: (0..<size / 2).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) })
    }

    @Test(arguments: [0, 16, 100, 400, 700, 900, 1000, 1100, 1500, 4000, 70_000])
    func messagesOfEverySizeDecodeToWhatWasEncoded(size: Int) throws {
        for seed in 0..<5 {
            let message = request(size: size, seed: seed)
            #expect(try RpcV1.Request(protobufBytes: message.protobufBytes()) == message)
        }
    }

    @Test func manyResponsesDecodeOneAfterAnother() throws {
        for index in 0..<2000 {
            let response = RpcV1.Response(
                code: .notFound, message: "message \(index)", details: Array(repeating: 7, count: index),
                notProcessed: index % 2 == 0, payload: Array(repeating: 9, count: index % 300))
            #expect(try RpcV1.Response(protobufBytes: response.protobufBytes()) == response)
        }
    }

    @Test(arguments: [100, 5000])
    func cutShortOrDamagedBytesAreRefused(size: Int) throws {
        let bytes = request(size: size, seed: 1).protobufBytes()
        for cut in [1, 2, bytes.count / 2, bytes.count - 1] {
            #expect(throws: ProtoDecodingError.self) { try RpcV1.Request(protobufBytes: Array(bytes.prefix(cut))) }
        }
        // A length far past the end, after a field that fills much of the scratch space.
        let damaged = bytes + [0x22, 0xFF, 0xFF, 0x03]
        #expect(throws: ProtoDecodingError.self) { try RpcV1.Request(protobufBytes: damaged) }
    }
}
