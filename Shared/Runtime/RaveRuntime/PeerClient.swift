import RaveRPC
import RaveTransport

extension ServiceContext {
    /// A client of another service at `address`, over mTLS presenting this service's own certificate (the one
    /// `RAVE_TLS_CERT` / `RAVE_CERT_DIR` name), as internal calls require; log lines carry `peer`.
    public func peerClient(at address: SocketAddress, peer: String) throws -> RPCClient {
        let tls = try TLSContext(
            .client(
                trustRootsPath: configuration.tlsCertificateAuthorityPath,
                certificateChainPath: configuration.tlsCertificatePath,
                privateKeyPath: configuration.tlsPrivateKeyPath))
        return RPCClient(
            host: address.host, port: address.port, tls: tls, group: group, logger: logger.with("peer", peer))
    }
}
