import RaveRPC
import RaveTransport
import Synchronization

extension CallPipeline {
    /// Serves a single call on the client connection's event loop, over a backend connection of the same loop:
    /// no Task, continuation or thread hand-off per call (the RPC server's loop fallback).
    ///
    /// Only the common case goes this way: a call `CallAdmission` admits with what is known without waiting (a
    /// player whose token and user are cached, or an anonymous call), to a healthy backend with a connection on
    /// this loop. Anything else — a refusal too — returns nil before any side effect and takes `proxy`, which
    /// decides it with the same rule after charging the client's address.
    func startProxy(
        request: [UInt8], context: RequestContext, loop: EventLoop,
        completion: @escaping (Result<[UInt8], RPCError>) -> Void
    ) -> (() -> Void)? {
        if context.method == BatchPlan.batchMethod {
            return startBatch(request: request, context: context, loop: loop, completion: completion)
        }
        guard let route = try? route(context.method) else { return nil }
        // A player's token resolved on this path before comes with its forwarded entries (`LoopCaller`).
        let token: CallToken
        var player: LoopCaller? = nil
        if route.tokenNeed == .required, let authorization = context.metadata[MetadataKey.authorization] {
            guard let resolved = authenticator.loopCaller(authorization: authorization) else { return nil }
            token = .verified(resolved.caller)
            player = resolved
        } else {
            guard let cached = cachedToken(for: route, context: context) else { return nil }
            token = cached
        }
        guard
            case .success(let admitted) = admission.decide(
                method: context.method, route: route, role: context.peer.role, token: token,
                deadline: context.deadline, now: monotonicNanoseconds())
        else { return nil }
        let owners = boardOwners(for: admitted.service)
        let appID = admitted.caller?.appID ?? ""
        guard
            let (index, backend) = admitted.backend.choose(
                for: owners?.routing(request: request, appID: appID)),
            let connection = backend.loopConnections?.connection(on: loop)
        else { return nil }

        let host = Self.host(of: context.peer.address)
        do throws(RPCError) {
            try protection.admit(
                host: host, requestSizes: CollectionOfOne((method: context.method, bytes: request.count)))
        } catch {
            completion(.failure(error))
            return {}
        }
        do throws(RPCError) {
            if let user = admitted.chargedUser { try protection.users.charge(user, cost: 1) }
        } catch {
            protection.release()
            completion(.failure(error))
            return {}
        }
        // Without the admin certificate, `decide` admits a player as `LoopCaller.forwardedEntries` describes it.
        assert(
            player == nil || context.peer.role == .admin
                || admitted.caller == CallAdmission<BackendPool>.playerCaller(player!.caller, isAdmin: false))
        let metadata =
            if let player, context.peer.role != .admin {
                forwardedMetadata(context, player: player, host: host)
            } else {
                forwardedMetadata(context, caller: admitted.caller, host: host)
            }
        let call = ProxiedCall(
            pool: admitted.backend, protection: protection, loop: loop, method: context.method, request: request,
            metadata: metadata, deadline: admitted.backendDeadline, boardOwners: owners, appID: appID,
            traffic: traffic, completion: completion)
        loopProxiedCalls.wrappingAdd(1, ordering: .relaxed)
        call.start(on: connection, backendIndex: index, backend: backend)
        return { call.cancel() }
    }
}

/// One call proxied on a client connection's loop (`startProxy`, or a call of `startBatch`): the attempt on the
/// loop's backend connection, and when that fails not processed (or there is no such connection), the further
/// attempts of `ServiceCaller` (in a Task, as for any call).
final class ProxiedCall: @unchecked Sendable {
    // @unchecked: the mutable fields are touched only on `loop`; the retry Task reads `let`s and comes back
    // through `loop.execute`.

    private let pool: BackendPool
    private let protection: Protection
    private let loop: EventLoop
    private let method: String
    private let request: [UInt8]
    private let metadata: EncodedMetadata
    private let deadline: UInt64
    private let completion: (Result<[UInt8], RPCError>) -> Void
    /// Whether finishing or cancelling ends the call's admission (a batch's calls share the batch's).
    private let releasesProtection: Bool
    /// The board owners when the call is one the gateway routes by board (leaderboards), and the caller's
    /// application: the call's board (`board`) is found in its request only when a choice depends on it.
    private let boardOwners: BoardOwners?
    private let appID: String
    /// Where the call's outcome is counted (`GatewayAdmin/GetSystemStatus`), from when it was made.
    private let traffic: ServiceTraffic?
    private let started = monotonicNanoseconds()
    private var cancelled = false
    /// Whether the current attempt's completion ran (it may run before `startCall` returns): a field rather
    /// than a captured local, which would cost a heap box per call.
    private var answered = false
    private var attempt: (connection: RPCConnection, streamID: UInt32)?
    private var retry: Task<Void, Never>?

    init(
        pool: BackendPool, protection: Protection, loop: EventLoop, method: String, request: [UInt8],
        metadata: EncodedMetadata, deadline: UInt64, releasesProtection: Bool = true, boardOwners: BoardOwners?,
        appID: String, traffic: ServiceTraffic? = nil, completion: @escaping (Result<[UInt8], RPCError>) -> Void
    ) {
        self.boardOwners = boardOwners
        self.appID = appID
        self.traffic = traffic
        self.pool = pool
        self.protection = protection
        self.loop = loop
        self.method = method
        self.request = request
        self.metadata = metadata
        self.deadline = deadline
        self.completion = completion
        self.releasesProtection = releasesProtection
    }

    /// The call's board, for routing to its owner (`BoardOwners.routing`); nil for calls not routed by board.
    private var board: BoardRouting? { boardOwners?.routing(request: request, appID: appID) }

    /// Starts on the loop's connection of a healthy backend when there is one, else through `ServiceCaller`.
    func start() {
        if let (index, backend) = pool.choose(for: board),
            let connection = backend.loopConnections?.connection(on: loop)
        {
            start(on: connection, backendIndex: index, backend: backend)
        } else {
            retry(after: nil)
        }
    }

    func start(on connection: RPCConnection, backendIndex: Int, backend: Backend) {
        let now = monotonicNanoseconds()
        let options = CallOptions(
            timeout: .nanoseconds(Int64(deadline > now ? deadline - now : 0)), maxRetries: 0,
            encodedMetadata: metadata)
        answered = false
        let streamID = connection.startCall(method: method, request: request, options: options) { [self] result in
            answered = true
            attempt = nil
            guard !cancelled else { return }
            if case .failure(let error) = result, error.notProcessed {
                // A refusal by a board's former owner says nothing about the backend's health.
                if error.code == .unavailable && BoardOwners.refusal(in: error) == nil { backend.markHealthy(false) }
                retry(after: (backendIndex, error))
            } else {
                finish(result)
            }
        }
        if !answered { attempt = (connection, streamID) }
    }

    /// Called by the server when the client cancelled or the deadline passed; it answers the client itself.
    func cancel() {
        guard !cancelled else { return }
        cancelled = true
        if releasesProtection { protection.release() }
        if let attempt { attempt.connection.cancelStartedCall(streamID: attempt.streamID) }
        retry?.cancel()
    }

    private func retry(after failed: (index: Int, error: RPCError)?) {
        let now = monotonicNanoseconds()
        let options = CallOptions(
            timeout: .nanoseconds(Int64(deadline > now ? deadline - now : 0)), maxRetries: 0,
            encodedMetadata: metadata)
        retry = Task { [self] in
            let result: Result<[UInt8], RPCError>
            do throws(RPCError) {
                result = .success(
                    try await ServiceCaller(pool: pool, board: board).call(
                        method: method, request: request, options: options, after: failed))
            } catch {
                result = .failure(error)
            }
            loop.execute { [self] in
                guard !cancelled else { return }
                finish(result)
            }
        }
    }

    private func finish(_ result: Result<[UInt8], RPCError>) {
        if releasesProtection { protection.release() }
        if let traffic {
            let now = monotonicNanoseconds()
            traffic.record(service: pool.service, code: result.code, nanoseconds: now &- started, now: now)
        }
        completion(result)
    }
}
