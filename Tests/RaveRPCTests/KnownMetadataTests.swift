import RaveMessages
import RaveTelemetry
import RaveTransport
import RaveWire
import Testing

@testable import RaveRPC

/// A connection reuses the decoded metadata of a recent request when the next one carries the same bytes: the
/// reuse must never hand one request another request's metadata or caller.
@Suite("Known metadata")
struct KnownMetadataTests {
    private func request(metadata: [String: String]) -> [UInt8] {
        RpcV1.Request(method: "m/x", timeoutMs: 0, metadata: metadata, payload: [1]).protobufBytes()
    }

    /// The metadata entries of a request with `metadata`, as the connection reads them from the envelope.
    private func entries(_ metadata: [String: String]) throws -> [UInt8] {
        Array(try EnvelopeCodec.decodeRequest(request(metadata: metadata)).get().encodedMetadata.bytes)
    }

    private func known(_ metadata: [String: String]) throws -> ServerConnection.KnownMetadata {
        ServerConnection.KnownMetadata(
            metadata: RequestMetadata(validated: EncodedMetadata(validatedBytes: try entries(metadata)[...])),
            caller: nil)
    }

    @Test func theSameEntriesMatchTheKnownMetadata() throws {
        let metadata = ["rave-caller-user-id": "user-1", "trace-id": "t-1"]
        let known = try known(metadata)
        #expect(try entries(metadata).withUnsafeBytes { known.matches($0) })
        #expect(known.metadata.dictionary == metadata)
    }

    @Test func otherEntriesDoNotMatch() throws {
        let known = try known(["rave-caller-user-id": "user-1"])
        for metadata in [["rave-caller-user-id": "user-2"], ["rave-caller-user-id": "user-1", "x": "y"], [:]] {
            #expect(try !entries(metadata).withUnsafeBytes { known.matches($0) })
        }
    }

    /// Entries that do not decode are refused INVALID_ARGUMENT on their stream, right after valid ones were kept.
    @Test func invalidEntriesAreRefusedWhateverIsKnown() async throws {
        let server = try InMemoryServer()
        let client = try await server.rawClient()
        var events = client.events.makeAsyncIterator()
        client.sendHandshake()
        let valid = RpcV1.Request(
            method: echoMethod, timeoutMs: 0, metadata: ["k": "v"],
            payload: EchoV1.EchoRequest(payload: [4]).protobufBytes())
        client.send(Frame(type: .request, streamID: 1, body: valid.protobufBytes()))
        #expect(try #require(await events.nextFrame()).response?.code == .ok)
        // A metadata value that is not UTF-8: 0x1A entry, key "k", value 0xC3 0x28.
        let brokenEntry: [UInt8] = [0x1A, 0x07, 0x0A, 0x01, 0x6B, 0x12, 0x02, 0xC3, 0x28]
        let invalid = [0x0A, UInt8(echoMethod.utf8.count)] + Array(echoMethod.utf8) + brokenEntry
        client.send(Frame(type: .request, streamID: 3, body: invalid))
        let refused = try #require(await events.nextFrame())
        #expect(refused.streamID == 3 && refused.response?.code == .invalidArgument)
        client.close()
    }

    @Test func nonASCIIStringsStillDecode() throws {
        let metadata = ["trace-id": "grüße", "idempotency-key": "日本"]
        let decoded = try EnvelopeCodec.decodeRequest(request(metadata: metadata)).get()
        #expect(decoded.metadata == metadata)
    }

    @Test func eachCallOnOneConnectionSeesItsOwnCaller() async throws {
        let certificates = try TestCertificates()
        let group = try EventLoopGroup(loopCount: 1)
        let server = RPCServer(
            services: [CallerReport()], access: AccessPolicy(otherwise: .anyone, callerMetadataFrom: [.client]),
            tls: try certificates.serverTLS(requireClientCertificate: true), group: group,
            logger: Logger(label: "test.server", level: .error))
        try server.start()
        let connection = try await RPCConnection.connect(
            host: "127.0.0.1", port: server.localPort, tls: try certificates.clientTLS(withCertificate: true),
            group: group, logger: Logger(label: "test.client", level: .error))

        func metadata(_ user: String?, trace: String) -> [String: String] {
            var metadata = ["trace-id": trace]
            if let user {
                metadata[MetadataKey.callerUserID] = user
                metadata[MetadataKey.callerScopes] = "player \(user)"
            }
            return metadata
        }
        let sequence = [
            metadata("a", trace: "1"), metadata("a", trace: "1"), metadata("b", trace: "1"),
            metadata("a", trace: "1"), metadata(nil, trace: "1"), metadata("a", trace: "2"),
        ]
        for sent in sequence {
            let answer = try await connection.call(
                method: CallerReport.method, request: [], options: CallOptions(metadata: sent))
            #expect(String(decoding: answer, as: UTF8.self) == CallerReport.describe(sent))
        }
        // Many at once, so requests with different metadata arrive in the same read.
        try await withThrowingTaskGroup(of: Void.self) { calls in
            for index in 0..<40 {
                let sent = metadata(index % 3 == 0 ? nil : "user-\(index % 2)", trace: "\(index % 4)")
                calls.addTask {
                    let answer = try await connection.call(
                        method: CallerReport.method, request: [], options: CallOptions(metadata: sent))
                    #expect(String(decoding: answer, as: UTF8.self) == CallerReport.describe(sent))
                }
            }
            try await calls.waitForAll()
        }
        connection.close()
        await server.shutdown()
        group.shutdown()
    }
}

/// Answers with the caller and trace id the server gave the handler.
private struct CallerReport: RPCService {
    static let serviceName = "rave.test.v1.CallerReport"
    static let method = "\(serviceName)/Report"

    /// What the handler should answer for a request sent with `metadata` over mutual TLS.
    static func describe(_ metadata: [String: String]) -> String {
        let user = metadata[MetadataKey.callerUserID] ?? "-"
        let scopes = (metadata[MetadataKey.callerScopes] ?? "").split(separator: " ").sorted().joined(separator: ",")
        return "\(user)|\(scopes)|\(metadata["trace-id"] ?? "")"
    }

    var methods: [RPCMethod] {
        [
            RPCMethod(name: Self.method) { _, context in
                let user = context.caller?.userID ?? "-"
                let scopes = (context.caller?.scopes ?? []).sorted().joined(separator: ",")
                return Array("\(user)|\(scopes)|\(context.metadata["trace-id"] ?? "")".utf8)
            }
        ]
    }
}
