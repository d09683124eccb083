/// How an operator's access token differs from a player's, written by identity and read by the gateway.
///
/// Both are the same kind of JWT, signed with identity's keys, but an operator token has its own issuer, so every
/// verifier of player tokens (which accepts only the players' issuer) refuses it, and the gateway's operator verifier
/// refuses players' tokens the same way. Its claims: `sub` the operator's id, `app` empty, `sid` the operator
/// session, `scp` "operator role:<role> publisher:<id or *>".
public enum OperatorToken {
    /// The `iss` of operator tokens.
    public static let issuer = "rave-identity-operator"
    /// Every operator token's first scope.
    public static let scope = "operator"
    /// Stands for every publisher in `publisher:` scopes and in `rave-caller-operator-publisher`.
    public static let allPublishers = "*"

    /// What an operator token says about its holder.
    public struct Grant: Sendable, Hashable {
        public var role: OperatorRole
        /// The publisher's id (32 hex digits), or nil for every publisher.
        public var publisherID: String?

        public init(role: OperatorRole, publisherID: String?) {
            self.role = role
            self.publisherID = publisherID
        }

        /// The publisher scope as metadata and scopes spell it: the id, or "*".
        public var publisherScope: String { publisherID ?? OperatorToken.allPublishers }
    }

    /// The scopes an operator token carries for `grant`.
    public static func scopes(for grant: Grant) -> [String] {
        [scope, "role:\(grant.role)", "publisher:\(grant.publisherScope)"]
    }

    /// The grant `scopes` carry; nil unless they are an operator token's (the operator scope, one known role, one
    /// publisher scope).
    public static func grant(fromScopes scopes: [String]) -> Grant? {
        guard scopes.contains(scope) else { return nil }
        let roles = scopes.compactMap { $0.hasPrefix("role:") ? OperatorRole(name: String($0.dropFirst(5))) : nil }
        let publishers = scopes.compactMap { $0.hasPrefix("publisher:") ? String($0.dropFirst(10)) : nil }
        guard roles.count == 1, publishers.count == 1, let publisher = publishers.first, !publisher.isEmpty else {
            return nil
        }
        return Grant(role: roles[0], publisherID: publisher == allPublishers ? nil : publisher)
    }
}
