import RaveMessages
import RaveTelemetry
import RaveWire
import Testing

@testable import RaveRPC

/// A server reads a request's metadata entries in place (`EnvelopeCodec.scanMetadata`) and decodes the dictionary
/// only when a handler reads `RequestContext.metadata`: both must give what decoding the entries at once gave,
/// and refuse what it refused, with the same message.
@Suite("Metadata read lazily")
struct LazyMetadataTests {
    private func body(_ metadata: [String: String]) -> [UInt8] {
        RpcV1.Request(method: "m/x", timeoutMs: 0, metadata: metadata, payload: [1]).protobufBytes()
    }

    /// The entries of `body`, scanned in place: what `scanMetadata` says, or its error's message.
    private func scan(_ body: [UInt8]) throws -> Result<CallerMetadata, EnvelopeError>? {
        let fields = try EnvelopeCodec.scanRequest(body[...])
        let entries: [UInt8]? = fields.metadata.map { Array(body[$0]) } ?? fields.scatteredMetadata
        guard let entries else { return nil }
        return entries.withUnsafeBytes { entries in
            Result { () throws(EnvelopeError) in try EnvelopeCodec.scanMetadata(entries) }
        }
    }

    /// What `scanMetadata` must find, worked out from the dictionary decoded at once.
    private func expected(from metadata: [String: String]) -> CallerMetadata {
        CallerMetadata(
            assertsCaller: MetadataKey.callerAssertions.contains { metadata[$0] != nil },
            userID: metadata[MetadataKey.callerUserID], appID: metadata[MetadataKey.callerAppID],
            sessionID: metadata[MetadataKey.callerSessionID], scopes: metadata[MetadataKey.callerScopes])
    }

    @Test func entriesReadInPlaceGiveWhatTheDictionaryGives() throws {
        let cases: [[String: String]] = [
            ["trace-id": "t"],
            [MetadataKey.callerUserID: "u-1", MetadataKey.callerScopes: "player guest", "trace-id": "t"],
            [MetadataKey.callerAppID: "app", MetadataKey.callerSessionID: "s"],
            [MetadataKey.clientAddress: "10.0.0.1"],
            [MetadataKey.callerUserID: "", "": "empty key", "k": ""],
            ["trace-id": "grüße", MetadataKey.callerUserID: "日本"],
        ]
        for metadata in cases {
            let body = body(metadata)
            let decoded = try EnvelopeCodec.decodeRequest(body).get()
            #expect(decoded.metadata == metadata)
            #expect(try scan(body)?.get() == expected(from: metadata), "\(metadata)")
            let lazy = RequestMetadata(validated: decoded.encodedMetadata)
            #expect(lazy.dictionary == metadata)
            #expect(lazy.dictionary == metadata, "read twice")
        }
    }

    @Test func aLaterEntryWinsAsInTheDictionary() throws {
        var entries = EncodedMetadata([MetadataKey.callerUserID: "first"])
        entries.append(key: "trace-id", value: "t")
        entries.append(key: MetadataKey.callerUserID, value: "second")
        var body: [UInt8] = []
        EnvelopeCodec.appendRequest(
            streamID: 1, method: "m/x", timeoutMs: 0, metadata: [:], encodedMetadata: entries, payload: [],
            to: &body)
        let envelope = Array(body[(Frame.lengthPrefixSize + Frame.headerSize)...])
        let decoded = try EnvelopeCodec.decodeRequest(envelope).get()
        #expect(decoded.metadata[MetadataKey.callerUserID] == "second")
        #expect(try scan(envelope)?.get().userID == "second")
        #expect(RequestMetadata(validated: decoded.encodedMetadata).dictionary == decoded.metadata)
    }

    /// Damaged entries (bytes changed, cut short) are refused by the scan exactly when, and with the message
    /// with which, decoding them at once refused them.
    @Test func damagedEntriesAreRefusedWithTheSameMessage() throws {
        let metadata = [
            MetadataKey.callerUserID: "user-1", MetadataKey.callerScopes: "player", "trace-id": "abc",
            "idempotency-key": "k-1",
        ]
        let original = body(metadata)
        var random = SystemRandomNumberGenerator()
        var refused = 0
        for round in 0..<3000 {
            var damaged = original
            if round % 3 == 0 {
                damaged.removeLast(Int.random(in: 1...damaged.count, using: &random))
            } else {
                for _ in 0...Int.random(in: 0...2, using: &random) {
                    let index = Int.random(in: 0..<damaged.count, using: &random)
                    damaged[index] = [0x00, 0x80, 0xC3, 0xFF, 0x12, 0x0A, UInt8.random(in: 0...255)].randomElement()!
                }
            }
            guard let scanned = try? scan(damaged) else { continue }
            switch (EnvelopeCodec.decodeRequest(damaged), scanned) {
            case (.success(let request), .success(let summary)):
                #expect(summary == expected(from: request.metadata))
                #expect(RequestMetadata(validated: request.encodedMetadata).dictionary == request.metadata)
            case (.failure(let decodeError), .failure(let scanError)):
                refused += 1
                #expect(decodeError.message == scanError.message)
            case (let decoded, let scanned):
                Issue.record("decoding gave \(decoded), the scan \(scanned), for \(damaged)")
            }
        }
        #expect(refused > 0)
    }

    @Test func aContextMadeFromADictionaryKeepsIt() {
        var context = RequestContext(
            requestID: "r", method: "m/x", deadline: 0, metadata: ["a": "1"],
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: nil), caller: nil,
            logger: Logger(label: "test", level: .error))
        #expect(context.metadata == ["a": "1"])
        context.metadata["b"] = "2"
        #expect(context.metadata == ["a": "1", "b": "2"])
        context.metadata = [:]
        #expect(context.metadata.isEmpty)
    }

    @Test func requestNumbersReservedForConnectionsNeverOverlap() {
        let router = RPCRouter(
            services: [], access: .open, configuration: RPCServerConfiguration(),
            logger: Logger(label: "test", level: .error), observer: SilentServerObserver())
        let first = router.reserveRequestNumbers(256)
        let single = router.nextRequestID()
        let second = router.reserveRequestNumbers(256)
        #expect(first == 1)
        #expect(single == router.requestID(number: 257))
        #expect(second == 258)
    }
}

/// Metadata over a live connection: a handler reads what was sent, and bad entries are still refused on the
/// request's stream with the message decoding them gave.
@Suite("Metadata on a connection", .timeLimit(.minutes(1)))
struct MetadataOnAConnectionTests {
    @Test func aBadMetadataValueIsRefusedOnItsStream() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        // Method "m", then an entry with key "k" and the value 0xC3 0x28 (not UTF-8).
        let body: [UInt8] = [0x0A, 0x01, 0x6D, 0x1A, 0x07, 0x0A, 0x01, 0x6B, 0x12, 0x02, 0xC3, 0x28]
        guard case .failure(let decodeError) = EnvelopeCodec.decodeRequest(body) else {
            Issue.record("the envelope decoded")
            return
        }
        client.send(Frame(type: .request, streamID: 3, body: body))
        let frame = try #require(await events.nextFrame())
        #expect(frame.streamID == 3)
        #expect(frame.response?.code == .invalidArgument)
        #expect(frame.response?.message == "the request envelope does not parse: \(decodeError.message)")
        await server.stop()
    }

    @Test func callerMetadataFromAnUntrustedPeerIsRefused() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        // The same bytes twice: the second request must not slip through as known metadata.
        for streamID: UInt32 in [1, 3] {
            let body = RpcV1.Request(
                method: echoMethod, timeoutMs: 0, metadata: [MetadataKey.callerUserID: "u", "trace-id": "t"],
                payload: EchoV1.EchoRequest(payload: [1]).protobufBytes()
            ).protobufBytes()
            client.send(Frame(type: .request, streamID: streamID, body: body))
            let frame = try #require(await events.nextFrame())
            #expect(frame.streamID == streamID)
            #expect(frame.response?.code == AccessPolicy.open.callerMetadataRefusal(role: nil).code)
            #expect(frame.response?.message == AccessPolicy.open.callerMetadataRefusal(role: nil).message)
        }
        await server.stop()
    }

    @Test func aHandlerReadsTheMetadataSent() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let sent = ["trace-id": "t-1", "idempotency-key": "k", "x": "grüße"]
        // Twice, so the second call reads the connection's known metadata.
        for streamID: UInt32 in [1, 3] {
            let body = RpcV1.Request(
                method: echoMethod, timeoutMs: 0, metadata: sent,
                payload: EchoV1.EchoRequest(payload: Array("metadata".utf8)).protobufBytes()
            ).protobufBytes()
            client.send(Frame(type: .request, streamID: streamID, body: body))
            let frame = try #require(await events.nextFrame())
            let response = try #require(frame.response)
            #expect(response.code == .ok)
            let echoed = try EchoV1.EchoResponse(protobufBytes: response.payload).payload
            #expect(String(decoding: echoed, as: UTF8.self) == TestEchoService.describeMetadata(sent))
        }
        await server.stop()
    }
}
