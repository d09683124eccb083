import Foundation
import Testing

@testable import RaveTransport

@Suite struct OutboundBufferTests {
    @Test func consumesFromTheFrontAndKeepsOrderAcrossCompaction() {
        var buffer = OutboundBuffer()
        var expected: [UInt8] = []
        var written: [UInt8] = []
        for round in 0..<200 {
            let chunk = (0..<(round * 37 % 5000 + 1)).map { UInt8(truncatingIfNeeded: $0 &+ round) }
            chunk.withUnsafeBytes { buffer.append($0) }
            expected += chunk
            let take = min(buffer.count, round * 53 % 7000)
            buffer.withReadableBytes(limit: take) { written += $0 }
            buffer.consume(take)
        }
        buffer.withReadableBytes(limit: .max) { written += $0 }
        buffer.consume(buffer.count)
        #expect(written == expected)
        #expect(buffer.isEmpty)
    }
}

@Suite struct TransportErrorTests {
    @Test func errorsCompareByCodeNotMessage() {
        #expect(TransportError.tlsHandshakeFailed("a") == .tlsHandshakeFailed("b"))
        #expect(TransportError(.timeout, "connect took too long") == .timeout)
        #expect(TransportError.timeout != .closed)
    }
}

@Suite struct DevelopmentCertificatesTests {
    @Test func writesAuthorityAndLeavesWithPrivateKeyFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try DevelopmentCertificates.write(to: directory.path, services: ["identity", "client"])
        for name in ["ca", "identity", "client"] {
            let certificate = try String(contentsOfFile: "\(directory.path)/\(name).pem", encoding: .utf8)
            #expect(certificate.hasPrefix("-----BEGIN CERTIFICATE-----"))
            let attributes = try FileManager.default.attributesOfItem(atPath: "\(directory.path)/\(name)-key.pem")
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }
        // The pair loads as a TLS server identity, proving key and certificate match.
        _ = try TLSContext(
            .server(
                certificateChainPath: "\(directory.path)/identity.pem",
                privateKeyPath: "\(directory.path)/identity-key.pem",
                trustRootsPath: "\(directory.path)/ca.pem", requireClientCertificate: true))
    }

    @Test func unknownHostIsRejectedBeforeAnySocketIsMade() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        await #expect(throws: TransportError.invalidAddress("x")) {
            _ = try await Connector.connect(
                to: "not-an-address.invalid", port: 1, in: group, tls: nil, handler: RecordingHandler())
        }
        await #expect(throws: TransportError.connectionRefused) {
            _ = try await Connector.connect(
                to: "127.0.0.1", port: 1, in: group, tls: nil, handler: RecordingHandler())
        }
    }
}

@Suite struct ChannelLifecycleTests {
    @Test func shuttingDownTheGroupClosesOpenChannels() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        let serverSide = RecordingHandler()
        let listener = try makeListener(group: group, tls: nil) { serverSide }
        let recorder = RecordingHandler()
        _ = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group, tls: nil, handler: recorder)
        #expect(await eventually { serverSide.snapshot.activeCount == 1 })
        group.shutdown()
        #expect(recorder.snapshot.inactiveCount == 1)
        #expect(serverSide.snapshot.inactiveCount == 1)
    }

    @Test func gracefulCloseDeliversBufferedOutputBeforeClosing() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let sender = try makeListener(group: group, tls: nil) { ClosingSender() }
        defer { sender.close() }
        let recorder = RecordingHandler()
        _ = try await Connector.connect(to: "127.0.0.1", port: sender.localPort, in: group, tls: nil, handler: recorder)
        #expect(await eventually { recorder.snapshot.inactiveCount == 1 })
        #expect(recorder.snapshot.received.count == ClosingSender.size)
        #expect(recorder.snapshot.inactiveError == nil)
    }
}

/// Writes a few MiB and closes at once: `close()` must still deliver all of it.
final class ClosingSender: ChannelHandler {
    static let size = 3 << 20

    func channelActive(_ channel: Channel) {
        channel.write([UInt8](repeating: 7, count: Self.size))
        channel.close()
    }
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {}
    func channelInactive(_ channel: Channel, error: TransportError?) {}
}
