import Foundation
import Synchronization
import Testing

@testable import RaveTransport

@Suite struct TLSTransportTests {
    @Test func echoesOneMebibyteInRandomChunksOverTLS() async throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let listener = try makeListener(group: group, tls: try certificates.server())
        defer { listener.close() }

        let recorder = RecordingHandler()
        let channel = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group, tls: try certificates.client(), handler: recorder)
        var generator = SystemRandomNumberGenerator()
        let payload = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var offset = 0
        while offset < payload.count {
            let end = min(payload.count, offset + Int.random(in: 1...70_000))
            let chunk = Array(payload[offset..<end])
            channel.loop.execute {
                channel.write(chunk)
                channel.flush()
            }
            offset = end
        }
        #expect(await eventually { recorder.snapshot.received.count >= payload.count })
        #expect(recorder.snapshot.received == payload)
        #expect(recorder.snapshot.protocolVersion == "TLSv1.3")
        await onLoop(channel) { $0.close() }
        #expect(await eventually { recorder.snapshot.inactiveCount == 1 })
        #expect(recorder.snapshot.inactiveError == nil)
    }

    @Test func mutualTLSAcceptsClientCertificateFromOurAuthority() async throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let serverSide = RecordingHandler(echoes: true)
        let listener = try makeListener(group: group, tls: try certificates.server("identity", mutual: true)) {
            serverSide
        }
        defer { listener.close() }

        let recorder = RecordingHandler()
        let channel = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group,
            tls: try certificates.client(certificateFrom: certificates.ours), handler: recorder)
        await onLoop(channel) {
            $0.write(Array("ping".utf8))
            $0.flush()
        }
        #expect(await eventually { recorder.snapshot.received == Array("ping".utf8) })
        #expect(serverSide.snapshot.peerCommonName == "client")
        #expect(recorder.snapshot.peerCommonName == "identity")
        // The role travels as a subjectAltName URI, which the RPC layer turns into a PeerRole.
        #expect(serverSide.snapshot.peerCertificate?.uris == ["rave://client"])
        #expect(recorder.snapshot.peerCertificate?.uris == ["rave://service/identity"])
        await onLoop(channel) { $0.closeNow() }
    }

    @Test(arguments: [false, true])
    func mutualTLSRejectsClientWithoutCertificateOrFromAnotherAuthority(presentsForeignCertificate: Bool) async throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let serverSide = RecordingHandler(echoes: true)
        let listener = try makeListener(group: group, tls: try certificates.server("identity", mutual: true)) {
            serverSide
        }
        defer { listener.close() }

        let tls = try certificates.client(certificateFrom: presentsForeignCertificate ? certificates.other : nil)
        let recorder = RecordingHandler()
        do {
            // With TLS 1.3 the client may finish its side before the server rejects the certificate, so the
            // rejection shows either as a failed connect or as the connection dying right after.
            let channel = try await Connector.connect(
                to: "127.0.0.1", port: listener.localPort, in: group, tls: tls, handler: recorder)
            await onLoop(channel) {
                $0.write(Array("ping".utf8))
                $0.flush()
            }
            #expect(await eventually { recorder.snapshot.inactiveCount == 1 })
            #expect(recorder.snapshot.inactiveError != nil)
        } catch {
            #expect(error.code == .tlsHandshakeFailed || error.code == .connectionReset)
        }
        #expect(recorder.snapshot.received.isEmpty)
        #expect(serverSide.snapshot.activeCount == 0)
    }

    @Test func clientRejectsServerWhoseCertificateDoesNotMatchTheHost() async throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let listener = try makeListener(group: group, tls: try certificates.server("wallet"))
        defer { listener.close() }

        let error = await #expect(throws: TransportError.self) {
            _ = try await Connector.connect(
                to: "127.0.0.1", port: listener.localPort, in: group, tls: try certificates.client(),
                serverName: "identity", handler: RecordingHandler())
        }
        #expect(error?.code == .tlsHandshakeFailed)
        #expect(error?.message.contains("hostname mismatch") == true)
        // The same certificate is fine for the name it was issued to.
        let channel = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group, tls: try certificates.client(),
            serverName: "wallet", handler: RecordingHandler())
        await onLoop(channel) { $0.closeNow() }
    }

    @Test func plainTCPClientsOfATLSPortAreDroppedAndOthersStillServed() async throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        var options = ChannelOptions()
        options.handshakeTimeout = 300_000_000
        let listener = try makeListener(group: group, tls: try certificates.server(), options: options)
        defer { listener.close() }

        let talker = RecordingHandler()
        let talking = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group, tls: nil, handler: talker)
        await onLoop(talking) {
            $0.write(Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
            $0.flush()
        }
        let silent = RecordingHandler()
        _ = try await Connector.connect(to: "127.0.0.1", port: listener.localPort, in: group, tls: nil, handler: silent)
        #expect(await eventually { talker.snapshot.inactiveCount == 1 })
        #expect(await eventually { silent.snapshot.inactiveCount == 1 })

        let recorder = RecordingHandler()
        let channel = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group, tls: try certificates.client(), handler: recorder)
        await onLoop(channel) {
            $0.write(Array("still here".utf8))
            $0.flush()
        }
        #expect(await eventually { recorder.snapshot.received == Array("still here".utf8) })
        await onLoop(channel) { $0.closeNow() }
    }

    @Test func clientOfferingOnlyTLS11FailsTheHandshake() async throws {
        let error = try await handshakeFailure { $0.offersOnlyTLS11ForTesting = true }
        #expect(error?.code == .tlsHandshakeFailed)
        #expect(error?.message.contains("protocol version") == true)
    }

    /// The CBC suites TLS 1.2 used to accept: a client offering only one of them finds no common suite.
    @Test(arguments: ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-ECDSA-AES256-SHA384"])
    func tls12ClientOfferingOnlyACBCSuiteFailsTheHandshake(suite: String) async throws {
        let error = try await handshakeFailure { $0.offersOnlyTLS12ForTesting = suite }
        #expect(error?.code == .tlsHandshakeFailed)
    }

    /// The error of a client configured by `configure` connecting to a server of ours.
    ///
    /// Nil (and a recorded issue) when it connected; the server must never see the connection become active.
    private func handshakeFailure(_ configure: (inout TLSConfiguration) -> Void) async throws -> TransportError? {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let serverSide = RecordingHandler()
        let listener = try makeListener(group: group, tls: try certificates.server()) { serverSide }
        defer { listener.close() }

        var legacy = TLSConfiguration.client(trustRootsPath: "\(certificates.ours)/ca.pem")
        configure(&legacy)
        let tls = try TLSContext(legacy)
        let error = await #expect(throws: TransportError.self) {
            _ = try await Connector.connect(
                to: "127.0.0.1", port: listener.localPort, in: group, tls: tls, handler: RecordingHandler())
        }
        #expect(serverSide.snapshot.activeCount == 0)
        return error
    }

    /// A TLS 1.2 client offering everything OpenSSL has gets forward secrecy and an AEAD cipher.
    @Test func tls12ClientNegotiatesAnECDHEAEADSuite() async throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let serverSide = RecordingHandler()
        let listener = try makeListener(group: group, tls: try certificates.server()) { serverSide }
        defer { listener.close() }

        var legacy = TLSConfiguration.client(trustRootsPath: "\(certificates.ours)/ca.pem")
        legacy.offersOnlyTLS12ForTesting = "ALL:@SECLEVEL=0"
        let recorder = RecordingHandler()
        let channel = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group, tls: try TLSContext(legacy), handler: recorder)
        #expect(await eventually { serverSide.snapshot.activeCount == 1 })
        let suite = try #require(recorder.snapshot.cipherSuite)
        #expect(recorder.snapshot.protocolVersion == "TLSv1.2")
        #expect(suite.hasPrefix("ECDHE-"))
        #expect(
            suite.hasSuffix("-GCM-SHA256") || suite.hasSuffix("-GCM-SHA384") || suite.hasSuffix("-CHACHA20-POLY1305"))
        #expect(serverSide.snapshot.cipherSuite == suite)
        await onLoop(channel) { $0.closeNow() }
    }

    @Test func reloadPresentsTheNewCertificateToNewConnections() async throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let served = certificates.directory.path + "/served"
        try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
        try DevelopmentCertificates.write(to: served, services: ["gateway"], authorityName: "Old CA")
        let server = try TLSContext(
            .server(certificateChainPath: "\(served)/gateway.pem", privateKeyPath: "\(served)/gateway-key.pem"))
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let listener = try makeListener(group: group, tls: server)
        defer { listener.close() }

        await #expect(throws: TransportError.tlsHandshakeFailed("")) {
            _ = try await Connector.connect(
                to: "127.0.0.1", port: listener.localPort, in: group, tls: try certificates.client(),
                handler: RecordingHandler())
        }
        for file in ["gateway.pem", "gateway-key.pem"] {
            let data = try Data(contentsOf: URL(fileURLWithPath: "\(certificates.ours)/\(file)"))
            try data.write(to: URL(fileURLWithPath: "\(served)/\(file)"))
        }
        try server.reload()
        let channel = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group, tls: try certificates.client(),
            handler: RecordingHandler())
        await onLoop(channel) { $0.closeNow() }
    }
}
