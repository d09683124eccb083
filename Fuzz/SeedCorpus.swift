// Writes the seed corpora under Fuzz/corpus from real messages and frames (`scripts/fuzz.sh --seeds`).
// Compiled with Shared/Wire/RaveWire/*.swift into one module, so Frame needs no import.
import Foundation
import RaveMessages

/// The seed writer's `main`: `seed-corpus <directory>` writes `frames/`, `envelopes/` and `strings/` below it.
@main
enum SeedCorpus {
    static func main() throws {
        let directory = CommandLine.arguments.dropFirst().first ?? "Fuzz/corpus"
        for (name, bytes) in envelopeSeeds() {
            try write(bytes, to: "\(directory)/envelopes/\(name)")
        }
        for (name, bytes) in frameSeeds() {
            try write(bytes, to: "\(directory)/frames/\(name)")
        }
        for (name, bytes) in stringSeeds() {
            try write(bytes, to: "\(directory)/strings/\(name)")
        }
    }

    /// Text the strings fuzzer cuts at 0x1E into string fields, and a container whose strings hold NULs.
    static func stringSeeds() -> [(String, [UInt8])] {
        let pieces = ["Bob\u{0}Evil", "\u{0}abc", "seed\u{0}tail", "1.00\u{0}junk", "naïve", "", "\u{0}", "世界"]
        let text = Array(pieces.joined(separator: "\u{1E}").utf8) + [0x1E, 0xC3, 0x28, 0x1E, 0xFF, 0x00]
        var container = TestingV1.Container()
        container.item = TestingV1.Container.Item(name: "a\u{0}b")
        container.labels = [1: "\u{0}"]
        return [("text", text), ("container-with-nul", container.protobufBytes())]
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static let request = RpcV1.Request(
        method: "rave.echo.v1.Echo/Echo", timeoutMs: 1000, metadata: ["trace-id": "t1", "authorization": "Bearer x"],
        payload: EchoV1.EchoRequest(payload: Array("hi".utf8)).protobufBytes())
    static let response = RpcV1.Response(
        code: .unavailable, message: "draining", details: [1, 2], notProcessed: true, payload: [0x0A, 0x02, 0x68, 0x69])
    static let handshake = RpcV1.Handshake(
        protocolVersion: 1, maxFrameSize: 4_194_304, maxConcurrentStreams: 4096, agent: "rave-backend/1")
    static let goAway = RpcV1.GoAway(lastStreamId: 41, reason: "server draining")
    static let protocolError = RpcV1.ProtocolError(code: .invalidArgument, message: "frame type 66 is not defined")

    /// One message of every envelope type, and a test message with every field kind set.
    static func envelopeSeeds() -> [(String, [UInt8])] {
        var scalars = TestingV1.Scalars()
        scalars.doubleValue = -1.5
        scalars.floatValue = 0.25
        scalars.int32Value = -7
        scalars.int64Value = Int64.min
        scalars.uint32Value = UInt32.max
        scalars.uint64Value = UInt64.max
        scalars.sint32Value = -3
        scalars.sint64Value = -300_000
        scalars.fixed32Value = 0xDEAD_BEEF
        scalars.fixed64Value = 1 << 40
        scalars.sfixed32Value = -2
        scalars.sfixed64Value = -(1 << 40)
        scalars.boolValue = true
        scalars.stringValue = "héllo"
        scalars.bytesValue = [0, 255, 7]
        let item = TestingV1.Container.Item(name: "sword", count: 3, color: .deepBlue)
        var container = TestingV1.Container()
        container.scalars = scalars
        container.item = item
        container.items = [item, TestingV1.Container.Item(name: "shield", count: -1, color: .red)]
        container.numbers = [1, -1, 300]
        container.names = ["a", ""]
        container.blobs = [[1], []]
        container.ratios = [0.5, -0.0]
        container.flags = [true, false]
        container.colors = [.green, .deepBlue]
        container.color = .red
        container.mode = .auto
        container.status = .notFound
        container.target = .targetItem(item)
        container.counters = ["wins": 10, "losses": -2]
        container.itemsById = [7: item]
        container.labels = [1: "one", UInt64.max: "max"]
        container.default = "keyword"
        container.internal = true
        container.class = 9
        container.deltas = [-1, 1]
        container.fixedValues = [1, 2]
        container.weights = [1.5]
        container.bigNumbers = [UInt64.max]
        return [
            ("handshake", handshake.protobufBytes()), ("request", request.protobufBytes()),
            ("response", response.protobufBytes()), ("goaway", goAway.protobufBytes()),
            ("protocol-error", protocolError.protobufBytes()), ("container", container.protobufBytes()),
            ("scalars", scalars.protobufBytes()),
        ]
    }

    /// Frame streams as a client and a server send them, behind the fuzzer's two control bytes.
    ///
    /// The first control byte allows frames of up to 6 + 4 × 255 bytes; the second picks how reads are cut.
    static func frameSeeds() -> [(String, [UInt8])] {
        func stream(_ frames: [Frame], splitSeed: UInt8) -> [UInt8] {
            var bytes: [UInt8] = [255, splitSeed]
            for frame in frames { frame.append(to: &bytes) }
            return bytes
        }
        let client = [
            Frame(type: .handshake, streamID: 0, body: handshake.protobufBytes()),
            Frame(type: .request, streamID: 1, body: request.protobufBytes()),
            Frame(type: .ping, streamID: 0, body: Array("ping".utf8)),
            Frame(type: .cancel, streamID: 1),
        ]
        let server = [
            Frame(type: .handshake, streamID: 0, body: handshake.protobufBytes()),
            Frame(type: .response, streamID: 1, body: response.protobufBytes()),
            Frame(type: .pong, streamID: 0, body: Array("ping".utf8)),
            Frame(type: .goAway, streamID: 0, body: goAway.protobufBytes()),
            Frame(type: .error, streamID: 0, body: protocolError.protobufBytes()),
        ]
        let tooLarge: [UInt8] = [0x7F, 0xFF, 0xFF, 0xFF, FrameType.request.rawValue, 0, 0, 0, 0, 1]
        return [
            ("client", stream(client, splitSeed: 1)), ("server", stream(server, splitSeed: 2)),
            ("too-large", stream([], splitSeed: 3) + tooLarge),
        ]
    }
}
