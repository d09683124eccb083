/// Which peers a server lets call which service blocks, and whose caller metadata it believes.
///
/// Decided by the peer's certificate role (`PeerRole`) before a handler runs, in one place for every method
/// (`ServerConnection`): a refused call is PERMISSION_DENIED and reaches no handler. The built-in Health check is
/// open to every peer.
public struct AccessPolicy: Sendable {
    /// The peers a rule admits.
    public enum Peers: Sendable, Hashable {
        /// Every peer, with or without a certificate (the gateway's client-facing port: tokens decide there).
        case anyone
        /// Peers whose certificate carries one of these roles.
        case roles(Set<PeerRole>)

        /// Whether a peer of `role` (nil: no role) is admitted.
        public func admits(_ role: PeerRole?) -> Bool {
            switch self {
            case .anyone: true
            case .roles(let roles): role.map(roles.contains) ?? false
            }
        }
    }

    /// Rules by fully qualified service name ("rave.wallet.v1.MergeParticipant").
    public var services: [String: Peers]
    /// Rules of single methods ("rave.identity.v1.IdentityInternal/ListAllowedOrigins"), narrower than their
    /// service's rule; they win over it.
    public var methods: [String: Peers]
    /// The rule of every service without its own, and of the server's fallback handler.
    public var otherwise: Peers
    /// The roles whose `rave-caller-*` and `rave-client-address` metadata is believed; from any other peer a call
    /// carrying them is refused, never served with the metadata ignored.
    public var callerMetadataFrom: Set<PeerRole>

    public init(
        services: [String: Peers] = [:], methods: [String: Peers] = [:], otherwise: Peers,
        callerMetadataFrom: Set<PeerRole>
    ) {
        self.services = services
        self.methods = methods
        self.otherwise = otherwise
        self.callerMetadataFrom = callerMetadataFrom
    }

    /// Every peer may call every method, and nobody may assert a caller: a server whose own logic decides who
    /// calls (the gateway's client-facing port, tools, tests).
    public static let open = AccessPolicy(otherwise: .anyone, callerMetadataFrom: [])

    /// The rule for a fully qualified method name ("rave.wallet.v1.Wallet/PlaceBet").
    public func peers(forMethod method: String) -> Peers {
        if method == HealthCheck.methodName { return .anyone }
        if !methods.isEmpty, let rule = methods[method] { return rule }
        guard let slash = method.firstIndex(of: "/") else { return otherwise }
        return services[String(method[..<slash])] ?? otherwise
    }

    /// Whether a peer of `role` may send caller metadata.
    public func trustsCallerMetadata(from role: PeerRole?) -> Bool {
        role.map(callerMetadataFrom.contains) ?? false
    }

    /// PERMISSION_DENIED for a peer of `role` calling `method` under `rule`.
    func refusal(method: String, role: PeerRole?, rule: Peers) -> RPCError {
        // A method with a rule of its own is named; any other is refused for its whole service.
        let service =
            methods[method] != nil ? method : method.firstIndex(of: "/").map { String(method[..<$0]) } ?? method
        let allowed: String
        switch rule {
        case .anyone: allowed = "anyone"
        case .roles(let roles): allowed = roles.map(\.description).sorted().joined(separator: ", ")
        }
        return .permissionDenied(
            "\(service) may be called only by \(allowed.isEmpty ? "nobody" : allowed); this peer's certificate "
                + (role.map { "has the role \($0)" } ?? "carries no role"))
    }

    /// PERMISSION_DENIED for caller metadata from a peer of `role`.
    func callerMetadataRefusal(role: PeerRole?) -> RPCError {
        let allowed = callerMetadataFrom.map(\.description).sorted().joined(separator: ", ")
        let peer = "this peer's certificate " + (role.map { "has the role \($0)" } ?? "carries no role")
        guard !allowed.isEmpty else {
            return .permissionDenied(
                "rave-caller-* and rave-client-address metadata are set by the gateway, never by its clients; remove them"
            )
        }
        return .permissionDenied(
            "rave-caller-* and rave-client-address metadata are accepted only from \(allowed); \(peer)")
    }
}
