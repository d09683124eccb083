import RaveCrypto
import RaveMessages
import RaveServices
import RaveTelemetry
import RaveTransport
import RaveWire
import Synchronization
import Testing

@testable import RaveRPC

/// The server's request reader: `EnvelopeCodec.scanRequest` finds a REQUEST body's fields in place (the body stays
/// in the frame decoder's buffer), and a method's route is found from its bytes (`MethodTable`).
@Suite("Request reader")
struct RequestReaderTests {
    /// The fields `scanRequest` found, as values.
    private struct Scanned: Equatable {
        var method: String
        var timeoutMs: UInt32
        var metadata: [UInt8]?
        var payload: [UInt8]
    }

    private func scan(_ body: [UInt8]) throws(EnvelopeError) -> Scanned {
        let fields = try EnvelopeCodec.scanRequest(body[...])
        let metadata = fields.metadata.map { Array(body[$0]) } ?? fields.scatteredMetadata
        return Scanned(
            method: String(decoding: body[fields.method], as: UTF8.self), timeoutMs: fields.timeoutMs,
            metadata: metadata, payload: Array(body[fields.payload]))
    }

    @Test func everyFieldIsFoundInPlace() throws {
        let metadata = ["trace-id": "t-1", "idempotency-key": "k-ü"]
        let request = RpcV1.Request(
            method: "rave.echo.v1.Echo/Echo", timeoutMs: 2500, metadata: metadata, payload: [9, 8, 7])
        let body = request.protobufBytes()
        let scanned = try scan(body)
        #expect(scanned.method == "rave.echo.v1.Echo/Echo")
        #expect(scanned.timeoutMs == 2500)
        #expect(scanned.payload == [9, 8, 7])
        let entries = try #require(scanned.metadata)
        #expect(EncodedMetadata(validatedBytes: entries[...]).dictionary == metadata)
        // Over the bytes in place, as the server reads them: the same ranges.
        let inPlace = try body.withUnsafeBytes { raw in
            let fields = try EnvelopeCodec.scanRequest(raw)
            return (fields.method, fields.metadata, fields.payload)
        }
        let fields = try EnvelopeCodec.scanRequest(body[...])
        #expect(inPlace.0 == fields.method && inPlace.1 == fields.metadata && inPlace.2 == fields.payload)
    }

    @Test func anEmptyBodyIsARequestWithEveryFieldAtItsDefault() throws {
        #expect(try scan([]) == Scanned(method: "", timeoutMs: 0, metadata: nil, payload: []))
    }

    /// Protobuf lets a map's entries come between other fields; they are gathered, and the later of two entries
    /// with one key wins.
    @Test func metadataSplitByOtherFieldsIsGathered() throws {
        let first = EncodedMetadata(["trace-id": "t-1"]).bytes
        let second = EncodedMetadata(["trace-id": "t-2", "idempotency-key": "k"]).bytes
        let body = [0x0A, 0x03] + Array("m/x".utf8) + first + [0x22, 0x01, 0x05] + second
        let scanned = try scan(body)
        #expect(scanned.metadata.map { Array($0) } == Array(first + second))
        #expect(scanned.method == "m/x" && scanned.payload == [5])
        let decoded = try EnvelopeCodec.decodeRequest(body).get()
        #expect(decoded.metadata == ["trace-id": "t-2", "idempotency-key": "k"])
        #expect(Array(decoded.encodedMetadata.bytes) == Array(first + second))
    }

    /// Fields this version does not know, of every wire type, and known field numbers with another wire type, are
    /// skipped (as the hand-written decoder always did; protobuf-c refuses the latter); a later occurrence of a
    /// field wins.
    @Test func unknownFieldsOfEveryWireTypeAreSkipped() throws {
        let body: [UInt8] =
            [0x0A, 0x01, 0x61]  // method "a"
            + [0x48, 0x96, 0x01]  // field 9, varint 150
            + [0x51, 1, 2, 3, 4, 5, 6, 7, 8]  // field 10, fixed64
            + [0x5A, 0x02, 0xFF, 0x00]  // field 11, 2 bytes (not text: unknown fields are not read)
            + [0x65, 1, 2, 3, 4]  // field 12, fixed32
            + [0x12, 0x01, 0x00]  // field 2 (timeout) as length-delimited: not the timeout
            + [0x20, 0x07]  // field 4 (payload) as a varint: not the payload
            + [0x10, 0x64]  // timeout 100
            + [0x22, 0x01, 0x07]  // payload [7]
            + [0x0A, 0x01, 0x62]  // method "b", the later one
        #expect(try scan(body) == Scanned(method: "b", timeoutMs: 100, metadata: nil, payload: [7]))
    }

    /// Each kind of broken body is refused with the message the server puts in its INVALID_ARGUMENT answer; the
    /// method is checked where it is read, so its error comes before that of a later field.
    @Test(
        arguments: [
            ([0x0A, 0x05, 0x61], "a field of 5 bytes runs past the end"),
            ([0x0A, 0x02, 0xC3, 0x28], "field method is not valid UTF-8 text without NUL characters"),
            ([0x0A, 0x02, 0x61, 0x00], "field method is not valid UTF-8 text without NUL characters"),
            ([0x0A, 0x02, 0xC3, 0x28, 0x22, 0x09], "field method is not valid UTF-8 text without NUL characters"),
            ([0x10, 0xFF], "a varint is cut off or too long"),
            ([0x10] + Array(repeating: 0xFF, count: 10) + [0x01], "a varint is cut off or too long"),
            ([0x1A, 0x04, 0x0A, 0x09, 0x61, 0x62], "a field of 9 bytes runs past the end"),
            (
                [0x1A, 0x04, 0x0A, 0x02, 0xC3, 0x28],
                "field metadata key is not valid UTF-8 text without NUL characters"
            ),
            (
                [0x1A, 0x04, 0x12, 0x02, 0x61, 0x00],
                "field metadata value is not valid UTF-8 text without NUL characters"
            ),
            ([0x22, 0x03, 0x01], "a field of 3 bytes runs past the end"),
            ([0x03], "field tag 3 is not valid"),
            ([0x00], "field tag 0 is not valid"),
            ([0x65, 1, 2], "a field runs past the end"),
        ] as [([UInt8], String)])
    func brokenBodiesAreRefusedSayingWhatIsWrong(_ body: [UInt8], _ message: String) {
        guard case .failure(let error) = EnvelopeCodec.decodeRequest(body) else {
            Issue.record("\(body) decoded")
            return
        }
        #expect(error.message == message)
    }

    /// Every cut of a request, inside a field or between two, is refused or reads as the generated decoder reads
    /// the same bytes.
    @Test func everyCutOfARequestIsRefusedOrReadsAsTheGeneratedDecoderReadsIt() throws {
        let body = RpcV1.Request(
            method: "rave.echo.v1.Echo/Echo", timeoutMs: 300_000, metadata: ["trace-id": "t", "a": "ü"],
            payload: Array(0..<40)
        ).protobufBytes()
        var accepted = 0
        for count in 0...body.count {
            let cut = Array(body.prefix(count))
            let generated = try? RpcV1.Request(protobufBytes: cut)
            switch EnvelopeCodec.decodeRequest(cut) {
            case .success(let request):
                accepted += 1
                #expect(generated != nil, "a cut after \(count) bytes read by hand only")
                #expect(request.method == generated?.method && request.timeoutMs == generated?.timeoutMs)
                #expect(request.metadata == generated?.metadata && request.payload == generated?.payload)
            case .failure:
                #expect(generated == nil, "a cut after \(count) bytes read by the generated decoder only")
            }
        }
        // Between fields: before anything, after the method, the timeout, each entry and the payload.
        #expect(accepted == 6)
    }

    /// Garbage never reads outside the body: whatever it is refused or found, the ranges are within it.
    @Test func garbageIsRefusedOrReadWithinItsBytes() {
        var random = SplitMix64(seed: 0x5EED)
        for _ in 0..<5000 {
            let count = Int.random(in: 0...48, using: &random)
            let tags: [UInt8] = [0x0A, 0x10, 0x1A, 0x22, 0x03, 0xFF]
            let body = (0..<count).map { _ in
                Bool.random(using: &random)
                    ? tags.randomElement(using: &random)! : UInt8.random(in: 0...255, using: &random)
            }
            guard let fields = try? EnvelopeCodec.scanRequest(body[...]) else { continue }
            for range in [fields.method, fields.payload] + (fields.metadata.map { [$0] } ?? []) {
                #expect(range.lowerBound >= 0 && range.upperBound <= body.count)
            }
        }
    }

    @Test func routesAreFoundByTheirNamesBytes() {
        var values: [String: Int] = [:]
        for index in 0..<200 { values["rave.test.v1.Service\(index % 7)/Method\(index)"] = index }
        values[""] = -1
        let table = MethodTable(values)
        for (name, value) in values {
            let found = Array(name.utf8).withUnsafeBytes { table.find($0) }
            #expect(found?.name == name && found?.value == value)
        }
        for name in [
            "rave.test.v1.Service0/Method", "rave.test.v1.Service0/Method0x", "rave.test.v1.Service1/Method0", "x",
        ] {
            #expect(Array(name.utf8).withUnsafeBytes { table.find($0) } == nil, "\(name) was found")
        }
    }
}

/// Requests read in place on a live connection, and methods answered in place by a synchronous handler.
@Suite("Requests read in place", .timeLimit(.minutes(1)))
struct InPlaceRequestTests {
    /// A broken envelope is answered INVALID_ARGUMENT on its own stream, and the connection serves on.
    @Test func aBrokenEnvelopeIsAnsweredOnItsStreamAndTheConnectionServesOn() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        client.send(Frame(type: .request, streamID: 5, body: [0x0A, 0x03, 0x61, 0x62]))
        client.sendRequest(streamID: 7, method: echoMethod, payload: EchoV1.EchoRequest(payload: [4]).protobufBytes())
        var frames: [UInt32: Frame] = [:]
        for _ in 0..<2 {
            let frame = try #require(await events.nextFrame())
            frames[frame.streamID] = frame
        }
        let refused = try #require(frames[5])
        #expect(refused.response?.code == .invalidArgument)
        #expect(
            refused.response?.message == "the request envelope does not parse: a field of 3 bytes runs past the end")
        let answered = try #require(frames[7])
        #expect(answered.response?.code == .ok)
        #expect(try EchoV1.EchoResponse(protobufBytes: answered.response?.payload ?? []).payload == [4])
        client.close()
        await server.stop()
    }

    /// What a synchronous handler saw.
    private final class Observed: Sendable {
        let ranInTask = Mutex<[Bool]>([])
        let methods = Mutex<[String]>([])
    }

    private struct InPlaceService: RPCService {
        static let serviceName = "rave.test.v1.InPlace"
        let observed: Observed

        var methods: [RPCMethod] {
            [
                .synchronous(name: "\(Self.serviceName)/Reverse") { request, context in
                    observed.ranInTask.withLock { $0.append(withUnsafeCurrentTask { $0 != nil }) }
                    observed.methods.withLock { $0.append(context.method) }
                    return request.reversed()
                },
                .synchronous(name: "\(Self.serviceName)/Refuse") { _, _ in
                    throw RPCError(.failedPrecondition, "refused in place")
                },
                // Answers requests that start with 1 in place, and leaves the others to its async handler.
                RPCMethod(
                    name: "\(Self.serviceName)/Sometimes",
                    handler: { request, _ in
                        observed.ranInTask.withLock { $0.append(withUnsafeCurrentTask { $0 != nil }) }
                        return [2] + request
                    },
                    fastPath: { request, _ in
                        guard request.first == 1 else { return nil }
                        observed.ranInTask.withLock { $0.append(withUnsafeCurrentTask { $0 != nil }) }
                        return [1] + request
                    }),
            ]
        }
    }

    private func withServer(
        onLoop: Bool, _ body: (RPCConnection, Observed) async throws -> Void
    ) async throws {
        let certificates = try TestCertificates()
        let group = try EventLoopGroup(loopCount: 1)
        var configuration = RPCServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.runsHandlersOnEventLoop = onLoop
        let observed = Observed()
        let server = RPCServer(
            configuration: configuration, services: [InPlaceService(observed: observed)], access: .open,
            tls: try certificates.serverTLS(), group: group, logger: Logger(label: "test.server", level: .error))
        try server.start()
        let connection = try await RPCConnection.connect(
            host: "127.0.0.1", port: server.localPort, tls: try certificates.clientTLS(), group: group,
            logger: Logger(label: "test.client", level: .error))
        try await body(connection, observed)
        connection.close()
        await server.shutdown()
        group.shutdown()
    }

    @Test func aSynchronousHandlerIsAnsweredWithoutATaskOnTheLoop() async throws {
        try await withServer(onLoop: true) { connection, observed in
            let method = "\(InPlaceService.serviceName)/Reverse"
            let reversed = try await connection.call(method: method, request: [1, 2, 3], options: CallOptions())
            let empty = try await connection.call(method: method, request: [], options: CallOptions())
            #expect(reversed == [3, 2, 1] && empty == [])
            await #expect {
                try await connection.call(
                    method: "\(InPlaceService.serviceName)/Refuse", request: [], options: CallOptions())
            } throws: {
                ($0 as? RPCError)?.code == .failedPrecondition && ($0 as? RPCError)?.message == "refused in place"
            }
            #expect(observed.ranInTask.withLock { $0 } == [false, false])
            #expect(observed.methods.withLock { $0 } == [method, method])
        }
    }

    @Test func aFastPathThatDeclinesLeavesTheCallToItsAsyncHandler() async throws {
        try await withServer(onLoop: true) { connection, observed in
            let method = "\(InPlaceService.serviceName)/Sometimes"
            let inPlace = try await connection.call(method: method, request: [1, 7], options: CallOptions())
            let declined = try await connection.call(method: method, request: [3, 7], options: CallOptions())
            #expect(inPlace == [1, 1, 7] && declined == [2, 3, 7])
            #expect(observed.ranInTask.withLock { $0 } == [false, true])
        }
    }

    /// A server whose handlers run on Swift's pool runs synchronous handlers there too, on a Task.
    @Test func onThePoolASynchronousHandlerRunsOnATask() async throws {
        try await withServer(onLoop: false) { connection, observed in
            let method = "\(InPlaceService.serviceName)/Reverse"
            let reversed = try await connection.call(method: method, request: [1, 2], options: CallOptions())
            #expect(reversed == [2, 1])
            // A fast path is not tried there: the async handler serves every call.
            let sometimes = try await connection.call(
                method: "\(InPlaceService.serviceName)/Sometimes", request: [1], options: CallOptions())
            #expect(sometimes == [2, 1])
            #expect(observed.ranInTask.withLock { $0 } == [true, true])
        }
    }
}
