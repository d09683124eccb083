import Testing

@testable import RaveTransport

/// ALPN as the gateway's HTTP port uses it: the server selects the first of its protocols the client offers, and a
/// client offering none of them (or no ALPN) still connects, without a selected protocol.
@Suite struct ALPNTests {
    /// What each side saw selected after a handshake between a server and a client with these ALPN lists.
    func negotiated(server: [String], client: [String]) async throws -> (client: String?, server: String?) {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        var serverConfiguration = TLSConfiguration.server(
            certificateChainPath: "\(certificates.ours)/gateway.pem",
            privateKeyPath: "\(certificates.ours)/gateway-key.pem")
        serverConfiguration.applicationProtocols = server
        let serverSide = RecordingHandler()
        let listener = try makeListener(group: group, tls: try TLSContext(serverConfiguration)) { serverSide }
        defer { listener.close() }
        var clientConfiguration = TLSConfiguration.client(trustRootsPath: "\(certificates.ours)/ca.pem")
        clientConfiguration.applicationProtocols = client
        let clientSide = RecordingHandler()
        let channel = try await Connector.connect(
            to: "127.0.0.1", port: listener.localPort, in: group, tls: try TLSContext(clientConfiguration),
            handler: clientSide)
        #expect(await eventually { serverSide.snapshot.activeCount == 1 })
        await onLoop(channel) { $0.closeNow() }
        return (clientSide.snapshot.applicationProtocol, serverSide.snapshot.applicationProtocol)
    }

    @Test func theServerSelectsHTTP1WhenTheClientAlsoOffersH2() async throws {
        let selected = try await negotiated(server: ["http/1.1"], client: ["h2", "http/1.1"])
        #expect(selected.client == "http/1.1")
        #expect(selected.server == "http/1.1")
    }

    @Test func theServersPreferenceWins() async throws {
        let selected = try await negotiated(server: ["h2", "http/1.1"], client: ["http/1.1", "h2"])
        #expect(selected.client == "h2")
        #expect(selected.server == "h2")
    }

    @Test func aClientOfferingNothingInCommonStillConnectsWithoutAProtocol() async throws {
        let selected = try await negotiated(server: ["http/1.1"], client: ["h2"])
        #expect(selected.client == nil)
        #expect(selected.server == nil)
    }

    @Test func aClientWithoutALPNConnectsWithoutAProtocol() async throws {
        let selected = try await negotiated(server: ["http/1.1"], client: [])
        #expect(selected.client == nil)
        #expect(selected.server == nil)
    }

    @Test func aNameOutsideOneTo255BytesIsAConfigurationError() {
        var configuration = TLSConfiguration(role: .client)
        configuration.applicationProtocols = [""]
        #expect(throws: TransportError.self) { try TLSContext(configuration) }
    }
}
