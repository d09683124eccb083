import RaveGatewayRules
import RaveRPC

/// The gateway's rule for one call, decided without I/O: which credential the method needs, who the service
/// will see as the caller, whom the call is charged to, and how long the service may take.
///
/// Every path applies it the same way: a single call on the general path (`CallPipeline.dispatch`) or on the
/// loop (`startProxy`), and each call of a batch on either path. A path only gathers the inputs — the method's
/// route, the peer's role, the token as the `Authenticator` resolved it (awaited, or from its cache on the loop) —
/// and carries out the decision. `Backend` is what the gateway reaches a service through (its `BackendPool`).
struct CallAdmission<Backend: Sendable>: Sendable {
    /// A call the gateway forwards.
    struct Admitted: Sendable {
        /// The backend service ("wallet") and how to reach it.
        var service: String
        var backend: Backend
        /// Who the service sees in `rave-caller-*` metadata; nil for anonymous calls.
        var caller: Caller?
        /// The user whose rate limit the call is charged to; nil when no user calls.
        var chargedUser: String?
        /// The deadline passed on to the service: the client's, less the margin kept to answer in time.
        var backendDeadline: UInt64
        /// The operator account an admin call was made with (passed on in `rave-caller-operator*` metadata).
        var operatorCaller: OperatorCaller? = nil
        /// An admin write the gateway records in identity's audit log before forwarding it (`AdminRoles`: every
        /// write but those identity records itself).
        var audited = false
    }

    /// The services the gateway has backends for, by name.
    let services: [String: Backend]
    /// Taken off the client's deadline before calling a service, so the gateway answers before the client gives up.
    let deadlineMargin: UInt64

    /// Forwards the call or refuses it with the status the client gets.
    ///
    /// Refusals, in the order checked: the credential the method needs (for an operator: the role `AdminRoles`
    /// asks, and a `reason` for a write the gateway records), the scopes the caller's token grants (`ScopePolicy`),
    /// a service without backends (UNIMPLEMENTED), too little time left (DEADLINE_EXCEEDED).
    func decide(
        method: String, route: MethodRoute, role: PeerRole?, token: CallToken, deadline: UInt64, now: UInt64,
        reason: String? = nil
    ) -> Result<Admitted, RPCError> {
        let caller: Caller?
        let operatorCaller: OperatorCaller?
        switch Self.credential(method: method, route: route, role: role, token: token, reason: reason) {
        case .success(let found): (caller, operatorCaller) = found
        case .failure(let refusal): return .failure(refusal)
        }
        guard let backend = services[route.service] else {
            return .failure(.unimplemented("no service serves rave.\(route.service).v1 (method \(method))"))
        }
        guard deadline > now &+ deadlineMargin else {
            return .failure(RPCError(.deadlineExceeded, "too little time was left to call \(route.service)"))
        }
        let user = caller.flatMap { $0.userID.isEmpty ? nil : $0.userID }
        return .success(
            Admitted(
                service: route.service, backend: backend, caller: caller, chargedUser: user,
                backendDeadline: deadline - deadlineMargin, operatorCaller: operatorCaller,
                audited: route.access == .admin && Self.isAudited(method)))
    }

    /// The first part of `decide`, for every call and for the methods the gateway serves itself: who calls (the
    /// caller services would see and the operator account), or the refusal of the credential or of the token's
    /// scopes.
    static func credential(
        method: String, route: MethodRoute, role: PeerRole?, token: CallToken, reason: String?
    ) -> Result<(caller: Caller?, operatorCaller: OperatorCaller?), RPCError> {
        let caller: Caller?
        var operatorCaller: OperatorCaller? = nil
        switch (route.access, token) {
        case (.anonymous, _):
            caller = nil
        case (.login, .verified(let verified)):
            // A signed-in player may log in again: a guest connecting a provider is upgraded, not replaced, and
            // identity can only tell when it sees who calls.
            caller = Self.playerCaller(verified, isAdmin: false)
        case (.login, _):
            // Without a token, or with one that no longer verifies (an expired token sent with RefreshSession),
            // the login proceeds without a caller.
            caller = nil
        case (.admin, .operator(let verified)) where role != .admin:
            if let refusal = AdminRoles.refusal(method: method, role: verified.grant.role) {
                return .failure(.permissionDenied(refusal))
            }
            if Self.isAudited(method), (reason ?? "").isEmpty {
                return .failure(
                    .invalidArgument(
                        "\(method) is a write: an operator must say why in rave-reason metadata (1…500 characters), "
                            + "which the audit log records"))
            }
            caller = Caller(userID: "", appID: "", sessionID: verified.sessionID, scopes: [Caller.adminScope])
            operatorCaller = verified
        case (.admin, .rejected(let error)) where role != .admin:
            return .failure(error)
        case (.admin, _) where role != .admin:
            return .failure(
                .permissionDenied(
                    "admin methods need the admin credential (a client certificate with the admin role) or "
                        + "\"authorization: Bearer <operator access token>\" (Identity/OperatorLogin)"))
        case (_, .operator):
            return .failure(
                .permissionDenied("an operator's access token reaches only admin methods; this method needs a player's")
            )
        case (.admin, .rejected(let error)), (.player, .rejected(let error)):
            return .failure(error)
        case (.admin, .verified(let verified)):
            caller = Self.playerCaller(verified, isAdmin: true)
        case (.admin, .absent):
            caller = Caller(userID: "", appID: "", sessionID: "", scopes: [Caller.adminScope])
        case (.player, .absent):
            return .failure(
                .unauthenticated("this method needs \"authorization: Bearer <access token>\"; sign in first"))
        case (.player, .verified(let verified)):
            caller = Self.playerCaller(verified, isAdmin: role == .admin)
        }
        // Least privilege: a token issued for one purpose reaches only its methods, on every path.
        if let caller, let refusal = ScopePolicy.refusal(method: method, scopes: caller.scopes) {
            return .failure(refusal)
        }
        return .success((caller, operatorCaller))
    }

    /// Whether the gateway records `method` (an admin method) in the audit log: every write but those identity
    /// records itself with the state before and after.
    static func isAudited(_ method: String) -> Bool {
        AdminRoles.isWrite(method) && !AdminRoles.selfAudited.contains(method)
    }

    /// `caller` as a player call passes it on: scopes only the gateway grants are never trusted from a token.
    static func playerCaller(_ caller: Caller, isAdmin: Bool) -> Caller {
        var caller = caller
        caller.scopes.remove(Caller.serviceScope)
        if isAdmin { caller.scopes.insert(Caller.adminScope) } else { caller.scopes.remove(Caller.adminScope) }
        return caller
    }
}

/// What a path must find out about a call's token before `CallAdmission.decide`.
enum TokenNeed: Sendable, Equatable {
    /// The token is not looked at (anonymous methods).
    case none
    /// Used when present and valid; a login proceeds without it otherwise, an admin call fails with its error.
    case optional
    /// Without a valid token the call is refused.
    case required
}

/// A call's token, as the path resolved it for `CallAdmission.decide`.
enum CallToken: Sendable {
    /// No `authorization` metadata.
    case absent
    case verified(Caller)
    /// An operator's access token, verified (admin methods called without the admin certificate).
    case `operator`(OperatorCaller)
    /// Present but refused (expired, forged, revoked, malformed), with the reason.
    case rejected(RPCError)
}

extension MethodRoute {
    /// What `CallAdmission.decide` needs to know of the token for this method.
    var tokenNeed: TokenNeed {
        switch access {
        case .anonymous: .none
        case .login, .admin: .optional
        case .player: .required
        }
    }
}
