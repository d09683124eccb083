/// What a TLS endpoint presents and trusts.
///
/// Servers set a certificate chain and key; service ports also set `trustRootsPath` and
/// `requireClientCertificate` for mutual TLS. Clients set `trustRootsPath` (the CA that signs servers), and a
/// certificate chain and key when the server asks for one.
public struct TLSConfiguration: Sendable {
    /// Which side of the handshake a context is for.
    public enum Role: Sendable {
        case server
        case client
    }

    /// Protocol versions we can be limited to; nothing older than TLS 1.2 is accepted.
    public enum Version: Sendable, Comparable {
        case tls12
        case tls13
    }

    public var role: Role
    /// PEM file: the leaf certificate followed by any intermediates.
    public var certificateChainPath: String?
    /// PEM file with the private key of the leaf certificate.
    public var privateKeyPath: String?
    /// PEM file of CA certificates that sign the peer's certificate.
    public var trustRootsPath: String?
    /// Servers only: reject peers without a certificate signed by `trustRootsPath` (mutual TLS).
    public var requireClientCertificate: Bool = false
    /// Servers only: ask for a client certificate signed by `trustRootsPath` but accept peers without one
    /// (the gateway: players connect without a certificate, operators present the admin certificate).
    public var requestClientCertificate: Bool = false
    /// The oldest protocol version allowed (default TLS 1.2; TLS 1.3 is preferred whenever both sides can).
    public var minimumVersion: Version = .tls12
    /// Clients only: the name or IP the server certificate must match and the SNI sent for names;
    /// `Connector` falls back to the host it connects to.
    public var serverName: String?
    /// ALPN protocol names ("h2", "http/1.1") in order of preference; empty: no ALPN.
    ///
    /// A server selects the first one the client offers (a client offering none of them, or no ALPN at all, gets
    /// no ALPN answer); a client offers them.
    public var applicationProtocols: [String] = []
    /// Tests only: offer nothing newer than TLS 1.1, to prove such peers are refused.
    var offersOnlyTLS11ForTesting = false
    /// Tests only: offer nothing newer than TLS 1.2, with these OpenSSL cipher suites, to see which are accepted.
    var offersOnlyTLS12ForTesting: String?

    public init(role: Role) {
        self.role = role
    }

    /// A server presenting `certificateChainPath`; with `trustRootsPath` and `requireClientCertificate`, mTLS.
    public static func server(
        certificateChainPath: String,
        privateKeyPath: String,
        trustRootsPath: String? = nil,
        requireClientCertificate: Bool = false
    ) -> Self {
        var configuration = Self(role: .server)
        configuration.certificateChainPath = certificateChainPath
        configuration.privateKeyPath = privateKeyPath
        configuration.trustRootsPath = trustRootsPath
        configuration.requireClientCertificate = requireClientCertificate
        return configuration
    }

    /// A client trusting `trustRootsPath`, presenting a certificate when both paths are given (mTLS).
    public static func client(
        trustRootsPath: String,
        certificateChainPath: String? = nil,
        privateKeyPath: String? = nil,
        serverName: String? = nil
    ) -> Self {
        var configuration = Self(role: .client)
        configuration.trustRootsPath = trustRootsPath
        configuration.certificateChainPath = certificateChainPath
        configuration.privateKeyPath = privateKeyPath
        configuration.serverName = serverName
        return configuration
    }
}

/// The names a verified peer certificate carries: what the RPC layer reads the peer's role from.
public struct PeerCertificate: Hashable, Sendable {
    /// The subject's common name.
    public var commonName: String?
    /// The subjectAltName URIs, in certificate order (roles are `rave://…` URIs, docs/OPERATIONS.md).
    public var uris: [String]

    public init(commonName: String?, uris: [String]) {
        self.commonName = commonName
        self.uris = uris
    }
}
