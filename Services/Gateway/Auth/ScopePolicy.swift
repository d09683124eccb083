import RaveRPC

/// Which methods a token's scopes reach through the gateway: least privilege for tokens issued for one purpose.
///
/// Player tokens (`player`, plus `guest` or `authenticated`) reach every player method; what a guest may do there
/// is each service's rule. A token carrying a restricting scope reaches only that scope's methods, whatever else it
/// carries. Today that is the betting SDK's unbacked token (`player wallet:unbacked`, from
/// `Identity/IssueUnbackedToken`): it exists to play unbacked bets, so it reaches the wallet's betting and
/// provably-fair methods and nothing else: no profile, session, social, gifts or balance method, and no login
/// method (where identity would otherwise act on the token's account). docs/identity.md lists the scopes.
///
/// A pure function of the method name and the scopes, applied by `CallAdmission.decide` on every path (the loop
/// paths do not even see a restricted token: `Authenticator.cachedCaller` leaves those to the general path).
enum ScopePolicy {
    /// The scope of the unbacked token (the wallet's `unbackedOnlyScope`, identity's `unbackedOnlyScope`).
    static let unbackedOnlyScope = "wallet:unbacked"

    /// The methods the unbacked token reaches: bets (the wallet refuses it every bet that moves money), the game
    /// definitions, and the provably-fair seeds and verification.
    static let unbackedMethods: Set<String> = [
        "rave.wallet.v1.Wallet/PlaceBet", "rave.wallet.v1.Wallet/PlaceBets", "rave.wallet.v1.Wallet/ListGames",
        "rave.wallet.v1.Wallet/GetServerSeed", "rave.wallet.v1.Wallet/RotateServerSeed",
        "rave.wallet.v1.Wallet/VerifyBet",
    ]

    /// Restricting scopes and the only methods a token carrying one reaches.
    static let restrictions: [(scope: String, methods: Set<String>)] = [(unbackedOnlyScope, unbackedMethods)]

    /// True when `scopes` restrict a token to some methods.
    static func isRestricted(_ scopes: Set<String>) -> Bool {
        restrictions.contains { scopes.contains($0.scope) }
    }

    /// Nil when a caller with `scopes` may call `method`, else the PERMISSION_DENIED that refuses it.
    static func refusal(method: String, scopes: Set<String>) -> RPCError? {
        for restriction in restrictions
        where scopes.contains(restriction.scope) && !restriction.methods.contains(method) {
            return .permissionDenied(
                "a token with scope \(restriction.scope) may call only "
                    + restriction.methods.sorted().map { $0.split(separator: "/").last ?? "" }.joined(separator: ", ")
                    + "; \(method) needs the session's own access token")
        }
        return nil
    }
}
