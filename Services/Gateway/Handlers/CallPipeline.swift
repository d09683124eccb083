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

    let authenticator: Authenticator
    let pools: [String: BackendPool]
    let protection: Protection
    let adminCommonName: String
    let deadlineMargin: UInt64
    /// Single calls served on the client connection's loop (`startProxy`), for tests and diagnostics.
    let loopProxiedCalls = Atomic<Int>(0)
    /// Routes of the methods seen so far: parsing a method name allocates, a lookup does not.
    private let routes = Mutex<[String: MethodRoute]>([:])
    /// Bounds `routes` against clients inventing method names; beyond it names are parsed each time.
    private static let routeCacheCapacity = 4096

    init(
        authenticator: Authenticator, pools: [String: BackendPool], protection: Protection, adminCommonName: String,
        deadlineMargin: Duration
    ) {
        self.authenticator = authenticator
        self.pools = pools
        self.protection = protection
        self.adminCommonName = adminCommonName
        self.deadlineMargin = deadlineMargin.wholeNanoseconds
    }

    /// Serves one call of a method the gateway routes (the RPC server's fallback handler).
    func proxy(request: [UInt8], context: RequestContext) async throws(RPCError) -> [UInt8] {
        try protection.admit(context: context, calls: 1)
        defer { protection.release() }
        try protection.checkSize(request.count, method: context.method)
        return try await dispatch(
            method: context.method, request: request, context: context, metadata: context.metadata)
    }

    /// Routes one call: classify, authenticate, rate-limit per user, forward.
    ///
    /// `cost` is the number of client calls the call stands for (a PlaceBets made of a batch's bets).
    func dispatch(
        method: String, request: [UInt8], context: RequestContext, metadata: [String: String], cost: Int = 1
    ) async throws(RPCError) -> [UInt8] {
        let route = try self.route(method)
        let caller = try await self.caller(for: route, context: context)
        if let caller, !caller.userID.isEmpty { try protection.users.charge(caller.userID, cost: cost) }
        guard let pool = pools[route.service] else {
            throw .unimplemented("no service serves rave.\(route.service).v1 (method \(method))")
        }
        let now = monotonicNanoseconds()
        guard context.deadline > now &+ deadlineMargin else {
            throw RPCError(.deadlineExceeded, "too little time was left to call \(route.service)")
        }
        let options = CallOptions(
            timeout: .nanoseconds(Int64(context.deadline - now - deadlineMargin)),
            metadata: forwardedMetadata(metadata, caller: caller, peer: context.peer), maxRetries: 0)
        return try await ServiceCaller(pool: pool).call(method: method, request: request, options: options)
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

    func forwardedMetadata(
        _ incoming: [String: String], caller: Caller?, peer: PeerIdentity
    ) -> [String: String] {
        // Sized once for what is added below: growing a dictionary rehashes every key.
        var metadata = [String: String](minimumCapacity: incoming.count + 5)
        for (key, value) in incoming where !Self.strippedMetadata.contains(key) { metadata[key] = value }
        metadata[Self.clientAddressKey] = Self.host(of: peer.address)
        if let caller {
            metadata[MetadataKey.callerUserID] = caller.userID
            metadata[MetadataKey.callerAppID] = caller.appID
            metadata[MetadataKey.callerSessionID] = caller.sessionID
            metadata[MetadataKey.callerScopes] = caller.scopes.sorted().joined(separator: " ")
        }
        return metadata
    }

    /// The host part of "host:port" or "[v6]:port".
    static func host(of address: String) -> String {
        guard let colon = address.lastIndex(of: ":") else { return address }
        let host = address[..<colon]
        return host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : String(host)
    }
}
