import RaveTransport

/// What a peer is, as its verified certificate says.
///
/// The role is the only thing, besides a player's token at the gateway, that grants anything: membership of the
/// CA alone grants nothing.
///
/// A certificate carries its role as one subjectAltName URI (docs/OPERATIONS.md, "Trust model"):
///
/// | URI | role |
/// | --- | --- |
/// | `rave://gateway` | the gateway: calls public and admin methods on a player's or operator's behalf |
/// | `rave://service/<name>` | one of the backend services (`identity`, `wallet`, …) |
/// | `rave://admin` | an operator or studio server at the gateway's door; nothing on a service port |
/// | `rave://client` | a client that presents a certificate; no more than a client without one |
///
/// A certificate with no `rave://` URI, with two different ones, or with one not in the table has no role.
public enum PeerRole: Hashable, Sendable, CustomStringConvertible {
    case gateway
    case service(String)
    case admin
    case client

    static let scheme = "rave://"

    /// The role of a URI, or nil when the URI names none.
    public init?(uri: String) {
        guard uri.hasPrefix(Self.scheme) else { return nil }
        let path = uri.dropFirst(Self.scheme.count)
        switch path {
        case "gateway": self = .gateway
        case "admin": self = .admin
        case "client": self = .client
        default:
            let prefix = "service/"
            guard path.hasPrefix(prefix) else { return nil }
            let name = path.dropFirst(prefix.count)
            guard Self.isServiceName(name) else { return nil }
            self = .service(String(name))
        }
    }

    /// The role a verified certificate carries, or nil (see the type's documentation).
    public init?(certificate: PeerCertificate?) {
        guard let certificate else { return nil }
        var found: PeerRole?
        for uri in certificate.uris where uri.hasPrefix(Self.scheme) {
            guard let role = PeerRole(uri: uri), found == nil || found == role else { return nil }
            found = role
        }
        guard let found else { return nil }
        self = found
    }

    /// The URI that carries the role in a certificate.
    public var uri: String { Self.scheme + description }

    /// "gateway", "service/wallet", "admin", "client".
    public var description: String {
        switch self {
        case .gateway: "gateway"
        case .service(let name): "service/\(name)"
        case .admin: "admin"
        case .client: "client"
        }
    }

    /// The service's name when the peer is a backend service.
    public var serviceName: String? {
        if case .service(let name) = self { return name }
        return nil
    }

    /// Lower-case letters, digits and '-', 1…63 characters: what a service's name may be.
    private static func isServiceName(_ name: Substring) -> Bool {
        !name.isEmpty && name.utf8.count <= 63
            && name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
    }
}
