import Foundation
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTransport

/// Stand-ins for other services behind one real mTLS server on 127.0.0.1, and an mTLS client presenting the
/// calling service's certificate, as production wires a service to its peers.
///
/// The server presents `serverName`'s certificate and requires a client certificate of the same CA; the client
/// presents `clientName`'s. The stand-ins themselves are ordinary `RPCService`s answering from memory.
public final class StandInPeers: Sendable {
    public let client: RPCClient
    /// A directory with the CA and both certificates (the given one, or one written for these peers).
    public let certificates: String
    private let server: RPCServer
    private let ownsCertificates: Bool

    /// `certificates` may name a directory that already holds the CA and both names' certificates (shared with a
    /// service runtime or process under test); without it the peers write their own.
    public init(
        _ services: [any RPCService], serverName: String, clientName: String, certificates: String? = nil,
        group: EventLoopGroup
    ) throws {
        ownsCertificates = certificates == nil
        let directory =
            certificates
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("rave-peers-\(UUID())").path
        if ownsCertificates { try DevelopmentCertificates.write(to: directory, services: [serverName, clientName]) }
        self.certificates = directory
        server = RPCServer(
            services: services, access: TrustModel.backend,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(directory)/\(serverName).pem",
                    privateKeyPath: "\(directory)/\(serverName)-key.pem", trustRootsPath: "\(directory)/ca.pem",
                    requireClientCertificate: true)),
            group: group, logger: Logger(label: "stand-in-peers", level: .critical))
        try server.start()
        client = RPCClient(
            host: "127.0.0.1", port: server.localPort,
            tls: try TLSContext(
                .client(
                    trustRootsPath: "\(directory)/ca.pem", certificateChainPath: "\(directory)/\(clientName).pem",
                    privateKeyPath: "\(directory)/\(clientName)-key.pem")),
            group: group, logger: Logger(label: "stand-in-peers.client", level: .critical))
    }

    /// "127.0.0.1:port", as a service's `RAVE_<SERVICE>_<PEER>_ADDRESS` names the peers.
    public var address: String { "127.0.0.1:\(server.localPort)" }

    public func shutdown() async {
        client.close()
        await server.shutdown()
        if ownsCertificates { try? FileManager.default.removeItem(atPath: certificates) }
    }
}

extension StandInPeers {
    /// Serves `participant` over mutual TLS as a service presenting `serviceName`'s certificate, with the trust
    /// model every backend applies; `body` gets a client presenting identity's certificate (the one caller the
    /// trust model allows a participant of identity's sagas) and one presenting the gateway's.
    public static func servingToIdentityAndGateway(
        _ participant: any RPCService, as serviceName: String, group: EventLoopGroup,
        _ body: (_ identity: RPCClient, _ gateway: RPCClient) async throws -> Void
    ) async throws {
        let asIdentity = try StandInPeers([participant], serverName: serviceName, clientName: "identity", group: group)
        let asGateway: StandInPeers
        do {
            asGateway = try StandInPeers([participant], serverName: serviceName, clientName: "gateway", group: group)
        } catch {
            await asIdentity.shutdown()
            throw error
        }
        do {
            try await body(asIdentity.client, asGateway.client)
        } catch {
            await asGateway.shutdown()
            await asIdentity.shutdown()
            throw error
        }
        await asGateway.shutdown()
        await asIdentity.shutdown()
    }
}
