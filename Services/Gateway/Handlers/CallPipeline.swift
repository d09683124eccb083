import RaveGatewayRules
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
        MetadataKey.callerScopes, MetadataKey.callerAdmin, MetadataKey.callerOperator, MetadataKey.callerOperatorRole,
        MetadataKey.callerOperatorPublisher, clientAddressKey,
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
    let admission: CallAdmission<BackendPool>
    /// Records admin writes in identity's audit log before they are forwarded.
    let audit: AdminAudit?
    /// The calls forwarded to each service over the last minute, for `GatewayAdmin/GetSystemStatus`.
    let traffic: ServiceTraffic
    /// Single calls served on the client connection's loop (`startProxy`), for tests and diagnostics.
    let loopProxiedCalls = Atomic<Int>(0)
    /// Batches served on the client connection's loop (`startBatch`), for tests and diagnostics.
    let loopBatches = Atomic<Int>(0)
    /// Routes of the methods seen so far: parsing a method name allocates, a lookup does not.
    private let routes = Mutex<[String: MethodRoute]>([:])
    /// Bounds `routes` against clients inventing method names; beyond it names are parsed each time.
    private static let routeCacheCapacity = 4096

    init(
        authenticator: Authenticator, pools: [String: BackendPool], protection: Protection, deadlineMargin: Duration,
        boardOwners: BoardOwners? = nil, audit: AdminAudit? = nil
    ) {
        self.audit = audit
        self.authenticator = authenticator
        self.pools = pools
        self.boardOwners = boardOwners
        self.protection = protection
        self.admission = CallAdmission(services: pools, deadlineMargin: deadlineMargin.wholeNanoseconds)
        self.traffic = ServiceTraffic(services: pools.keys, now: monotonicNanoseconds())
    }

    /// The admin methods the gateway serves itself (`rave.gateway.v1.GatewayAdmin`).
    var gatewayAdmin: GatewayAdminHandler { GatewayAdminHandler(pools: pools, traffic: traffic) }

    /// Serves one call of a method the gateway routes (the RPC server's fallback handler).
    func proxy(request: [UInt8], context: RequestContext) async throws(RPCError) -> [UInt8] {
        try protection.admit(
            context: context, requestSizes: CollectionOfOne((method: context.method, bytes: request.count)))
        defer { protection.release() }
        return try await dispatch(method: context.method, request: request, context: context)
    }

    /// Routes one call: admit it (`CallAdmission`, with the token verified if need be), charge the user, forward.
    ///
    /// `cost` is the number of client calls the call stands for (a PlaceBets made of a batch's bets);
    /// `removing` the client metadata not passed on (a batch's calls also drop its idempotency key).
    func dispatch(
        method: String, request: [UInt8], context: RequestContext,
        removing removed: MetadataKeys = CallPipeline.strippedKeys,
        cost: Int = 1
    ) async throws(RPCError) -> [UInt8] {
        let route = try self.route(method)
        let token = await self.token(for: route, context: context)
        if route.service == GatewayAdminHandler.area {
            // The gateway's own admin methods: admitted like any admin call, then answered here.
            _ = try CallAdmission<BackendPool>.credential(
                method: method, route: route, role: context.peer.role, token: token,
                reason: context.metadata[MetadataKey.reason]
            ).get()
            return try gatewayAdmin.serve(method: method, request: request)
        }
        let admitted = try admission.decide(
            method: method, route: route, role: context.peer.role, token: token, deadline: context.deadline,
            now: monotonicNanoseconds(), reason: context.metadata[MetadataKey.reason]
        ).get()
        if let user = admitted.chargedUser { try protection.users.charge(user, cost: cost) }
        // Fail closed: a write the audit log cannot record is not forwarded.
        var recorded: String? = nil
        if admitted.audited, let audit {
            recorded = try await audit.begin(
                method: method, request: request, context: context, operatorCaller: admitted.operatorCaller)
        }
        let now = monotonicNanoseconds()
        let options = CallOptions(
            timeout: .nanoseconds(Int64(admitted.backendDeadline > now ? admitted.backendDeadline - now : 0)),
            maxRetries: 0,
            encodedMetadata: forwardedMetadata(
                context, caller: admitted.caller, operatorCaller: admitted.operatorCaller, removing: removed))
        let call = ServiceCaller(
            pool: admitted.backend,
            board: boardRouting(service: admitted.service, request: request, caller: admitted.caller))
        let started = monotonicNanoseconds()
        let outcome: Result<[UInt8], RPCError>
        do {
            outcome = .success(try await call.call(method: method, request: request, options: options))
        } catch {
            outcome = .failure(error)
        }
        let finished = monotonicNanoseconds()
        traffic.record(
            service: admitted.service, code: outcome.code, nanoseconds: finished &- started, now: finished)
        if let recorded, let audit {
            await audit.finish(eventID: recorded, outcome: outcome.failure)
        }
        return try outcome.get()
    }

    /// The token as `CallAdmission` needs it for `route`, verified (and resolved through merges) if need be.
    ///
    /// An admin method called without the admin certificate takes an operator's token instead of a player's.
    private func token(for route: MethodRoute, context: RequestContext) async -> CallToken {
        guard route.tokenNeed != .none,
            let authorization = context.metadata[MetadataKey.authorization]
        else { return .absent }
        do {
            if route.access == .admin, context.peer.role != .admin {
                return .operator(try await authenticator.operatorCaller(authorization: authorization))
            }
            return .verified(try await authenticator.caller(authorization: authorization))
        } catch {
            return .rejected(error)
        }
    }

    /// The token as `CallAdmission` needs it for `route`, from the authenticator's caches only; nil when deciding
    /// would need to wait (a token not verified recently, or a method whose token is optional).
    func cachedToken(for route: MethodRoute, context: RequestContext) -> CallToken? {
        switch route.tokenNeed {
        case .none:
            return .absent
        case .optional:
            return nil
        case .required:
            guard let authorization = context.metadata[MetadataKey.authorization] else { return .absent }
            return authenticator.cachedCaller(authorization: authorization).map { .verified($0) }
        }
    }

    /// The board of a leaderboards call, for routing to its owner; nil for every other call.
    func boardRouting(service: String, request: [UInt8], caller: Caller?) -> BoardRouting? {
        guard service == BoardOwners.service, let boardOwners else { return nil }
        return boardOwners.routing(request: request, appID: caller?.appID ?? "")
    }

    /// The board owners that route calls of `service` (leaderboards), for a `ProxiedCall` to find its board in
    /// its request when a choice depends on it; nil for every other service.
    func boardOwners(for service: String) -> BoardOwners? {
        service == BoardOwners.service ? boardOwners : nil
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

    /// The metadata the service gets: the client's, as the bytes it arrived in, without `removed`, plus the
    /// client's address and the caller.
    func forwardedMetadata(
        _ context: RequestContext, caller: Caller?, operatorCaller: OperatorCaller? = nil,
        removing removed: MetadataKeys = CallPipeline.strippedKeys, host: String? = nil
    ) -> EncodedMetadata {
        var added: [(key: String, value: String)] = [
            (Self.clientAddressKey, host ?? Self.host(of: context.peer.address))
        ]
        if let caller {
            added.append(contentsOf: Self.callerEntries(of: caller))
            // Who acted, for services that record operator actions: the admin certificate's name.
            if context.peer.role == .admin, caller.scopes.contains(Caller.adminScope) {
                added.append((MetadataKey.callerAdmin, context.peer.certificateCommonName ?? ""))
            }
        }
        // Which operator acted, with the role and publisher scope its token grants (services check them again).
        if let operatorCaller {
            added.append((MetadataKey.callerOperator, operatorCaller.operatorID))
            added.append((MetadataKey.callerOperatorRole, operatorCaller.grant.role.description))
            added.append((MetadataKey.callerOperatorPublisher, operatorCaller.grant.publisherScope))
        }
        return Self.incoming(context).replacing(removed, with: added)
    }

    /// `forwardedMetadata` of a player call admitted on the loop path without the admin certificate, with the
    /// caller's entries computed when its token was resolved (`LoopCaller.forwardedEntries`): the same bytes.
    func forwardedMetadata(_ context: RequestContext, player: LoopCaller, host: String) -> EncodedMetadata {
        player.forwardedMetadata(incoming: Self.incoming(context), host: host)
    }

    /// The client's metadata as bytes; a call that did not come from the network (tests calling the pipeline
    /// directly) has no encoded form, so its dictionary is encoded.
    private static func incoming(_ context: RequestContext) -> EncodedMetadata {
        context.encodedMetadata.isEmpty && !context.metadata.isEmpty
            ? EncodedMetadata(context.metadata) : context.encodedMetadata
    }

    /// The `rave-caller-*` entries a service gets for `caller` (scopes sorted, space-separated).
    static func callerEntries(of caller: Caller) -> [(key: String, value: String)] {
        [
            (MetadataKey.callerUserID, caller.userID), (MetadataKey.callerAppID, caller.appID),
            (MetadataKey.callerSessionID, caller.sessionID),
            (MetadataKey.callerScopes, caller.scopes.sorted().joined(separator: " ")),
        ]
    }

    /// The host part of "host:port" or "[v6]:port".
    ///
    /// Scans the UTF-8 bytes: it runs on every call (twice before), and `String.lastIndex(of:)` compares
    /// characters, grapheme by grapheme.
    static func host(of address: String) -> String {
        let bytes = address.utf8
        guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")) else { return address }
        var start = bytes.startIndex
        var end = colon
        if bytes.first == UInt8(ascii: "["), colon > start, bytes[bytes.index(before: colon)] == UInt8(ascii: "]") {
            start = bytes.index(after: start)
            end = bytes.index(before: colon)
        }
        return String(Substring(bytes[start..<end]))
    }
}
