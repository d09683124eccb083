import RaveRPC
import RaveTransport
import Synchronization

/// What every call through the gateway goes through: classify the method, establish the caller, charge the
/// caller's rate limit, and forward to the owning service with the caller in `rave-caller-*` metadata.
///
/// Single calls enter through `proxy` (the RPC server's fallback for every method it does not serve itself);
/// batch calls enter through `dispatch`, once per call, after the batch was admitted as a whole.
final class CallPipeline: Sendable {
    /// Metadata a client may not pass on: credentials, and what only the gateway may assert.
    static let strippedMetadata: Set<String> = [
        MetadataKey.authorization, MetadataKey.callerUserID, MetadataKey.callerAppID, MetadataKey.callerSessionID,
        MetadataKey.callerScopes, clientAddressKey,
    ]
    /// The client's IP address, for services' per-address limits (identity's login lockout).
    static let clientAddressKey = "rave-client-address"
    /// `strippedMetadata` as bytes, for filtering a client's encoded metadata.
    static let strippedKeys = MetadataKeys(strippedMetadata)
    /// What a batch's calls do not inherit from the batch: the stripped keys and the batch's idempotency key,
    /// which cannot stand for each of its calls.
    static let batchStrippedKeys = MetadataKeys(strippedMetadata.union([MetadataKey.idempotencyKey]))

    let authenticator: Authenticator
    let pools: [String: BackendPool]
    /// Board owners, when the gateway routes leaderboards calls (nil without a leaderboards service).
    let boardOwners: BoardOwners?
    let protection: Protection
    let adminCommonName: String
    let deadlineMargin: UInt64
    /// Single calls served on the client connection's loop (`startProxy`), for tests and diagnostics.
    let loopProxiedCalls = Atomic<Int>(0)
    /// Batches served on the client connection's loop (`startBatch`), for tests and diagnostics.
    let loopBatches = Atomic<Int>(0)
    /// Routes of the methods seen so far: parsing a method name allocates, a lookup does not.
    private let routes = Mutex<[String: MethodRoute]>([:])
    /// Bounds `routes` against clients inventing method names; beyond it names are parsed each time.
    private static let routeCacheCapacity = 4096

    init(
        authenticator: Authenticator, pools: [String: BackendPool], protection: Protection, adminCommonName: String,
        deadlineMargin: Duration, boardOwners: BoardOwners? = nil
    ) {
        self.authenticator = authenticator
        self.pools = pools
        self.boardOwners = boardOwners
        self.protection = protection
        self.adminCommonName = adminCommonName
        self.deadlineMargin = deadlineMargin.wholeNanoseconds
    }

    /// Serves one call of a method the gateway routes (the RPC server's fallback handler).
    func proxy(request: [UInt8], context: RequestContext) async throws(RPCError) -> [UInt8] {
        try protection.admit(context: context, calls: 1)
        defer { protection.release() }
        try protection.checkSize(request.count, method: context.method)
        return try await dispatch(method: context.method, request: request, context: context)
    }

    /// Routes one call: classify, authenticate, rate-limit per user, forward.
    ///
    /// `cost` is the number of client calls the call stands for (a PlaceBets made of a batch's bets);
    /// `removing` the client metadata not passed on (a batch's calls also drop its idempotency key).
    func dispatch(
        method: String, request: [UInt8], context: RequestContext,
        removing removed: MetadataKeys = CallPipeline.strippedKeys,
        cost: Int = 1
    ) async throws(RPCError) -> [UInt8] {
        let route = try self.route(method)
        let caller = try await self.caller(for: route, context: context)
        // The only place the scope rule applies: the loop paths leave restricted tokens to this one.
        if let caller, let refusal = ScopePolicy.refusal(method: method, scopes: caller.scopes) { throw refusal }
        if let caller, !caller.userID.isEmpty { try protection.users.charge(caller.userID, cost: cost) }
        guard let pool = pools[route.service] else {
            throw .unimplemented("no service serves rave.\(route.service).v1 (method \(method))")
        }
        let now = monotonicNanoseconds()
        guard context.deadline > now &+ deadlineMargin else {
            throw RPCError(.deadlineExceeded, "too little time was left to call \(route.service)")
        }
        let options = CallOptions(
            timeout: .nanoseconds(Int64(context.deadline - now - deadlineMargin)), maxRetries: 0,
            encodedMetadata: forwardedMetadata(context, caller: caller, removing: removed))
        return try await ServiceCaller(
            pool: pool, board: boardRouting(service: route.service, request: request, caller: caller)
        ).call(method: method, request: request, options: options)
    }

    /// The board of a leaderboards call, for routing to its owner; nil for every other call.
    func boardRouting(service: String, request: [UInt8], caller: Caller?) -> BoardRouting? {
        guard service == BoardOwners.service, let boardOwners else { return nil }
        return boardOwners.routing(request: request, appID: caller?.appID ?? "")
    }

    /// The route of `method`, from the cache when it was seen before.
    func route(_ method: String) throws(RPCError) -> MethodRoute {
        if let known = routes.withLock({ $0[method] }) { return known }
        let route = try MethodRoute(method: method)
        routes.withLock { routes in
            if routes.count < Self.routeCacheCapacity { routes[method] = route }
        }
        return route
    }

    /// The caller the service will see for `route`, or the status that refuses the call.
    private func caller(for route: MethodRoute, context: RequestContext) async throws(RPCError) -> Caller? {
        let isAdmin = context.peer.certificateCommonName == adminCommonName
        let authorization = context.metadata[MetadataKey.authorization]
        switch route.access {
        case .anonymous:
            return nil
        case .login:
            // A signed-in player may log in again: a guest connecting a provider is upgraded, not replaced, and
            // identity can only tell when it sees who calls. Without a token, or with one that no longer
            // verifies (an expired token sent with RefreshSession), the login proceeds without a caller.
            guard let authorization, let caller = try? await authenticator.caller(authorization: authorization)
            else { return nil }
            return playerCaller(caller, isAdmin: false)
        case .admin:
            guard isAdmin else {
                throw .permissionDenied("admin methods need the admin credential (the admin client certificate)")
            }
            var caller = Caller(userID: "", appID: "", sessionID: "", scopes: [])
            if let authorization { caller = try await authenticator.caller(authorization: authorization) }
            caller.scopes.insert(Caller.adminScope)
            return caller
        case .player:
            guard let authorization else {
                throw .unauthenticated("this method needs \"authorization: Bearer <access token>\"; sign in first")
            }
            return playerCaller(try await authenticator.caller(authorization: authorization), isAdmin: isAdmin)
        }
    }

    /// `caller` as a player call passes it on: scopes only the gateway grants are never trusted from a token.
    func playerCaller(_ caller: Caller, isAdmin: Bool) -> Caller {
        var caller = caller
        caller.scopes.remove(Caller.serviceScope)
        if isAdmin { caller.scopes.insert(Caller.adminScope) } else { caller.scopes.remove(Caller.adminScope) }
        return caller
    }

    /// The metadata the service gets: the client's, as the bytes it arrived in, without `removed`, plus the
    /// client's address and the caller.
    func forwardedMetadata(
        _ context: RequestContext, caller: Caller?, removing removed: MetadataKeys = CallPipeline.strippedKeys
    ) -> EncodedMetadata {
        // A call that did not come from the network (tests calling the pipeline directly) has no encoded form.
        let incoming =
            context.encodedMetadata.isEmpty && !context.metadata.isEmpty
            ? EncodedMetadata(context.metadata) : context.encodedMetadata
        var added: [(key: String, value: String)] = [(Self.clientAddressKey, Self.host(of: context.peer.address))]
        if let caller {
            added.append((MetadataKey.callerUserID, caller.userID))
            added.append((MetadataKey.callerAppID, caller.appID))
            added.append((MetadataKey.callerSessionID, caller.sessionID))
            added.append((MetadataKey.callerScopes, caller.scopes.sorted().joined(separator: " ")))
        }
        return incoming.replacing(removed, with: added)
    }

    /// The host part of "host:port" or "[v6]:port".
    static func host(of address: String) -> String {
        guard let colon = address.lastIndex(of: ":") else { return address }
        let host = address[..<colon]
        return host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : String(host)
    }
}
