import RaveRPC
import RaveServices
import RaveWire
import Testing

/// The bytes docs/PROTOCOL.md shows in its worked example; if these change, the document must too.
@Suite("PROTOCOL.md worked example", .timeLimit(.minutes(1)))
struct WorkedExampleTests {
    static let handshakeHex = "00 00 00 0d 01 00 00 00 00 00 08 01 10 80 80 80 02"
    static let requestHex = """
        00 00 00 37 02 00 00 00 00 01 0a 16 72 61 76 65 2e 65 63 68 6f 2e 76 31 2e 45 63 68 6f 2f 45 63 68 6f \
        10 e8 07 1a 0e 0a 08 74 72 61 63 65 2d 69 64 12 02 74 31 22 04 0a 02 68 69
        """
    static let responseHex = "00 00 00 0c 03 00 00 00 00 01 2a 04 0a 02 68 69"

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
    }

    static func bytes(_ hex: String) -> [UInt8] {
        hex.split(separator: " ").compactMap { UInt8($0, radix: 16) }
    }

    static var handshakeFrame: Frame {
        let handshake = RpcV1.Handshake(protocolVersion: 1, maxFrameSize: 4_194_304, maxConcurrentStreams: 0, agent: "")
        return Frame(type: .handshake, streamID: 0, body: handshake.protobufBytes())
    }

    static var requestFrame: Frame {
        let request = RpcV1.Request(
            method: "rave.echo.v1.Echo/Echo", timeoutMs: 1000, metadata: ["trace-id": "t1"],
            payload: EchoV1.EchoRequest(payload: Array("hi".utf8)).protobufBytes())
        return Frame(type: .request, streamID: 1, body: request.protobufBytes())
    }

    @Test func encoderProducesTheDocumentedBytes() {
        #expect(Self.hex(Self.handshakeFrame.encoded()) == Self.handshakeHex)
        #expect(Self.hex(Self.requestFrame.encoded()) == Self.requestHex)
        let response = RpcV1.Response(
            code: .ok, message: "", details: [], notProcessed: false,
            payload: EchoV1.EchoResponse(payload: Array("hi".utf8)).protobufBytes())
        #expect(
            Self.hex(Frame(type: .response, streamID: 1, body: response.protobufBytes()).encoded()) == Self.responseHex)
    }

    @Test func serverAnswersTheDocumentedRequestWithTheDocumentedResponse() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.send(bytes: Self.bytes(Self.handshakeHex) + Self.bytes(Self.requestHex))
        let frame = try #require(await events.nextFrame())
        #expect(Self.hex(frame.encoded()) == Self.responseHex)
        client.close()
        await server.stop()
    }
}
