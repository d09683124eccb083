import RaveRPC
import RaveServices
import RaveWire
import Testing

/// Bytes a broken or hostile client may send after (or instead of) its handshake.
struct BadInput: Sendable, CustomTestStringConvertible {
    var name: String
    /// Whether the client's valid HANDSHAKE goes first.
    var afterHandshake = true
    var bytes: [UInt8]

    var testDescription: String { name }

    /// A frame header with any length, type and flags, followed by `body`.
    static func header(length: UInt32, type: UInt8, flags: UInt8 = 0, body: [UInt8] = []) -> [UInt8] {
        let big = { (value: UInt32) in (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        return big(length) + [type, flags] + big(0) + body
    }

    static let all: [BadInput] = [
        BadInput(name: "length 0", bytes: [0, 0, 0, 0]),
        BadInput(name: "length 5, under the header", bytes: header(length: 5, type: 2)),
        BadInput(name: "type 0", bytes: header(length: 6, type: 0)),
        BadInput(name: "type 9 with flags 0xFF", bytes: header(length: 6, type: 9, flags: 0xFF)),
        BadInput(name: "type 255 with a body", bytes: header(length: 10, type: 255, body: [1, 2, 3, 4])),
        BadInput(name: "REQUEST on stream 0", bytes: Frame(type: .request, streamID: 0, body: [0x0A, 0]).encoded()),
        BadInput(name: "PING on stream 3", bytes: Frame(type: .ping, streamID: 3).encoded()),
        BadInput(
            name: "PING body over 64 bytes",
            bytes: Frame(type: .ping, streamID: 0, body: Array(repeating: 1, count: 65)).encoded()),
        BadInput(name: "CANCEL with a body", bytes: Frame(type: .cancel, streamID: 1, body: [0]).encoded()),
        BadInput(name: "RESPONSE from a client", bytes: Frame(type: .response, streamID: 1).encoded()),
        BadInput(name: "a second HANDSHAKE", bytes: Frame(type: .handshake, streamID: 0).encoded()),
        BadInput(
            name: "GOAWAY body that does not parse",
            bytes: Frame(type: .goAway, streamID: 0, body: [0xFF, 0xFF, 0xFF]).encoded()),
        BadInput(
            name: "HANDSHAKE body that does not parse", afterHandshake: false,
            bytes: Frame(type: .handshake, streamID: 0, body: [0x08, 0xFF, 0xFF]).encoded()),
        BadInput(
            name: "HANDSHAKE body with a truncated field", afterHandshake: false,
            bytes: Frame(type: .handshake, streamID: 0, body: [0x22, 0x10, 0x61]).encoded()),
        BadInput(name: "HTTP instead of frames", afterHandshake: false, bytes: Array("GET / HTTP/1.1\r\n\r\n".utf8)),
    ]
}

/// Broken frames close only the connection that sent them, with an ERROR frame first.
@Suite("Bad input", .timeLimit(.minutes(1)))
struct BadInputTests {
    @Test(arguments: BadInput.all)
    func badFrameGetsAnErrorFrameThenCloseAndOthersAreStillServed(_ input: BadInput) async throws {
        let server = try TestServer()
        let bystander = try await server.connect()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        if input.afterHandshake { client.sendHandshake() }
        client.send(bytes: input.bytes)

        let frame = try #require(await events.nextFrame(), "the server closed without an ERROR frame")
        #expect(frame.type == .error)
        let error = try RpcV1.ProtocolError(protobufBytes: frame.body)
        #expect(!error.message.isEmpty)
        await events.waitForClose()

        #expect(try await echoAfterDelay(bystander, delayMs: 0, payload: [4, 2]) == [4, 2])
        let newcomer = try await server.connect()
        #expect(try await echoAfterDelay(newcomer, delayMs: 0, payload: [4, 3]) == [4, 3])
        bystander.close()
        newcomer.close()
        await server.stop()
    }

    @Test func reservedFlagsAreIgnored() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let request = RpcV1.Request(
            method: echoMethod, timeoutMs: 0, metadata: [:], payload: EchoV1.EchoRequest(payload: [5]).protobufBytes())
        client.send(Frame(type: .request, flags: 0xFF, streamID: 11, body: request.protobufBytes()))
        let frame = try #require(await events.nextFrame())
        #expect(frame.type == .response && frame.streamID == 11)
        #expect(frame.response?.code == .ok)
        client.close()
        await server.stop()
    }

    @Test func framesSplitIntoSingleBytesAreServed() async throws {
        let server = try TestServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let request = RpcV1.Request(
            method: echoMethod, timeoutMs: 0, metadata: [:], payload: EchoV1.EchoRequest(payload: [6]).protobufBytes())
        for byte in Frame(type: .request, streamID: 13, body: request.protobufBytes()).encoded() {
            client.send(bytes: [byte])
        }
        let frame = try #require(await events.nextFrame())
        #expect(frame.streamID == 13 && frame.response?.code == .ok)
        client.close()
        await server.stop()
    }
}
