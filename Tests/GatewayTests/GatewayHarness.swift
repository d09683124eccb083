import Foundation
import RaveAuth
import RaveMessages
import RaveRPC
import RaveServices
import RaveTelemetry
import RaveTestSupport
import RaveTransport
import Synchronization

@testable import Gateway
@testable import GatewayBenchmarks

/// A gateway started in-process with real backends on loopback.
///
/// The backends are an identity stand-in serving SigningKeys and ResolveUsers, an Echo service that reports
/// the caller it saw, and (when asked for) a wallet stand-in serving PlaceBet and PlaceBets. Everything speaks
/// real TLS; the backends require the gateway's certificate.
final class GatewayHarness: Sendable {
    let directory: String
    let signer: AccessTokenSigner
    let identity: TestIdentity
    let echo: TestEcho
    let wallet: StandInWallet
    let runtime: GatewayRuntime
    private let running: Task<Void, any Error>
    private let backendGroup: EventLoopGroup
    let clientGroup: EventLoopGroup
    private let backends: [RPCServer]

    /// Starts everything; `settings` override the gateway's environment.
    ///
    /// Without `withWallet` the wallet's address refuses connections, like every other service's.
    static func start(_ settings: [String: String] = [:], withWallet: Bool = false) async throws -> GatewayHarness {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-gateway-\(UUID())").path
        try DevelopmentCertificates.write(
            to: directory, services: ["gateway", "identity", "echo", "admin", "client"])
        return try await GatewayHarness(directory: directory, settings: settings, withWallet: withWallet)
    }

    private init(directory: String, settings: [String: String], withWallet: Bool) async throws {
        self.directory = directory
        let key = try Ed25519PrivateKey()
        signer = AccessTokenSigner(keyID: "test-key-1", privateKey: key)
        identity = TestIdentity(keys: [SigningKeySet.Key(keyID: "test-key-1", publicKey: try key.publicKey())])
        echo = TestEcho()
        wallet = StandInWallet()
        backendGroup = try EventLoopGroup(loopCount: 1)
        clientGroup = try EventLoopGroup(loopCount: 1)
        let backendTLS = try TLSContext(
            .server(
                certificateChainPath: "\(directory)/identity.pem", privateKeyPath: "\(directory)/identity-key.pem",
                trustRootsPath: "\(directory)/ca.pem", requireClientCertificate: true))
        let quiet = Logger(label: "test-backend", level: .warning)
        let identityServer = RPCServer(
            services: [identity], access: TrustModel.backend, tls: backendTLS, group: backendGroup, logger: quiet)
        let echoServer = RPCServer(
            services: [echo], access: TrustModel.backend, tls: backendTLS, group: backendGroup, logger: quiet)
        let walletServer = RPCServer(
            services: [wallet], access: TrustModel.backend, tls: backendTLS, group: backendGroup, logger: quiet)
        try identityServer.start()
        try echoServer.start()
        try walletServer.start()
        backends = [identityServer, echoServer, walletServer]
        var environment = [
            "RAVE_CERT_DIR": directory, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
            "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "error", "RAVE_SHUTDOWN_GRACE": "1s",
            "RAVE_GATEWAY_IDENTITY_ADDRESSES": "127.0.0.1:\(identityServer.localPort)",
            "RAVE_GATEWAY_ECHO_ADDRESSES": "127.0.0.1:\(echoServer.localPort)",
            "RAVE_GATEWAY_KEY_REFRESH_GAP": "0s", "RAVE_GATEWAY_HEALTH_INTERVAL": "200ms",
            "RAVE_GATEWAY_HTTP_LISTEN": "127.0.0.1:0",
        ]
        // Services that are not running: port 1 refuses connections, so nothing here reaches a real stack.
        for service in ["social", "leaderboards", "gifts", "push", "wallet"] {
            environment["RAVE_GATEWAY_\(service.uppercased())_ADDRESSES"] = "127.0.0.1:1"
        }
        if withWallet { environment["RAVE_GATEWAY_WALLET_ADDRESSES"] = "127.0.0.1:\(walletServer.localPort)" }
        environment.merge(settings) { _, new in new }
        let runtime = try await GatewayRuntime.start(environment: environment)
        self.runtime = runtime
        running = Task { try await runtime.run() }
        await runtime.signingKeys.refresh()
        await runtime.revocations.poll()
    }

    /// A player's access token for `userID`.
    func token(
        for userID: String, appID: String = "app-1", scopes: [String] = ["player"], lifetime: Int64 = 900,
        now: Date = Date()
    ) throws -> String {
        try signer.issue(
            subject: userID, applicationID: appID, sessionID: "session-\(userID)", scopes: scopes, lifetime: lifetime,
            now: now
        ).token
    }

    /// A connection to the gateway; `certificate` names a client certificate of the harness CA to present.
    func connect(certificate: String? = nil) async throws -> RPCConnection {
        let tls = try TLSContext(
            .client(
                trustRootsPath: "\(directory)/ca.pem",
                certificateChainPath: certificate.map { "\(directory)/\($0).pem" },
                privateKeyPath: certificate.map { "\(directory)/\($0)-key.pem" }))
        return try await RPCConnection.connect(
            host: "127.0.0.1", port: runtime.rpcPort, tls: tls, group: clientGroup)
    }

    /// Stops the gateway and the backends and removes the certificates.
    func stop() async throws {
        runtime.triggerShutdown()
        try await running.value
        for server in backends { await server.shutdown() }
        backendGroup.shutdown()
        clientGroup.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Options carrying a bearer token.
func bearer(_ token: String, timeout: Duration = .seconds(5)) -> CallOptions {
    CallOptions(timeout: timeout, metadata: [MetadataKey.authorization: "Bearer \(token)"], maxRetries: 0)
}

/// Starts a 5-second echo through the gateway, cancels it on the client once the backend runs it, and waits (up to
/// 2.5 s) until the backend has seen the cancellation.
///
/// It waits for the call to reach the backend rather than a fixed 300 ms: on a loaded machine the call could still be
/// on its way then, and a cancel that overtakes it never reaches the backend.
func cancelALongCall(_ harness: GatewayHarness, _ connection: RPCConnection, options: CallOptions) async throws {
    let call = Task {
        try await connection.call(
            method: "rave.echo.v1.Echo/EchoAfterDelay",
            request: EchoV1.EchoAfterDelayRequest(payload: [1], delayMs: 5000).protobufBytes(), options: options)
    }
    try await eventually { harness.echo.delayedCalls.withLock { $0.running } > 0 }
    call.cancel()
    _ = await call.result
    var waited = 0
    while harness.echo.cancelledCalls.load(ordering: .relaxed) == 0 && waited < 50 {
        try await Task.sleep(for: .milliseconds(50))
        waited += 1
    }
}

/// Calls `method` and returns the error it fails with (nil on success).
func failure(
    _ connection: RPCConnection, _ method: String, _ request: [UInt8] = [], options: CallOptions = CallOptions()
) async -> RPCError? {
    do {
        _ = try await connection.call(method: method, request: request, options: options)
        return nil
    } catch {
        return error
    }
}

/// Identity's internal service as the gateway needs it: signing keys, merge resolution and the revocation feed.
final class TestIdentity: IdentityV1.IdentityInternalHandler {
    let keys: Mutex<[SigningKeySet.Key]>
    /// Merged-away user → merge target.
    let merges = Mutex<[String: String]>([:])
    let signingKeyCalls = Atomic<Int>(0)
    let resolveCalls = Atomic<Int>(0)
    /// The feed: ended sessions in the order they ended, with when their tokens expire (Unix ms; nil: 16 minutes
    /// from the read), and users merged away (`mergedUser` non-empty); the cursor is a position in this list.
    let revokedSessions = Mutex<[(session: String, expiresAt: Int64?, mergedUser: String)]>([])
    /// While set, ListRevocations fails as an unreachable identity would.
    let revocationFeedDown = Atomic<Bool>(false)
    /// What ListAllowedOrigins answers, and while `allowedOriginsDown` is set, it fails as an unreachable identity
    /// would.
    let allowedOrigins = Mutex<[String]>([])
    let allowedOriginsDown = Atomic<Bool>(false)
    /// The admin writes the gateway recorded (BeginAdminCall) and their outcomes by event id (FinishAdminCall).
    let auditEntries = Mutex<[IdentityV1.BeginAdminCallRequest]>([])
    let auditOutcomes = Mutex<[String: Int32]>([:])
    /// While set, BeginAdminCall fails as an unreachable identity would.
    let auditDown = Atomic<Bool>(false)

    /// Ends `sessionID`, as a logout would; `expiresAt` (Unix ms) says when its last token expires.
    func revoke(_ sessionID: String, expiresAt: Int64? = nil) {
        revokedSessions.withLock { $0.append((sessionID, expiresAt, "")) }
    }

    /// Merges `user` into `target`, as identity's saga records it: resolution changes and the feed says so.
    func merge(_ user: String, into target: String) {
        merges.withLock { $0[user] = target }
        revokedSessions.withLock { $0.append(("", nil, user)) }
    }

    init(keys: [SigningKeySet.Key]) {
        self.keys = Mutex(keys)
    }

    func signingKeys(
        _ request: IdentityV1.SigningKeysRequest, context: RequestContext
    ) async throws -> IdentityV1.SigningKeysResponse {
        signingKeyCalls.wrappingAdd(1, ordering: .relaxed)
        var response = IdentityV1.SigningKeysResponse()
        response.keys = keys.withLock { keys in
            keys.map { key in
                var entry = IdentityV1.SigningKey()
                entry.kid = key.keyID
                entry.algorithm = "EdDSA"
                entry.publicKey = key.publicKey.rawRepresentation
                return entry
            }
        }
        return response
    }

    func resolveUsers(
        _ request: IdentityV1.ResolveUsersRequest, context: RequestContext
    ) async throws -> IdentityV1.ResolveUsersResponse {
        resolveCalls.wrappingAdd(1, ordering: .relaxed)
        let merges = self.merges.withLock { $0 }
        var response = IdentityV1.ResolveUsersResponse()
        response.users = request.userIds.map { id in
            var user = IdentityV1.ResolvedUser()
            user.requestedId = id
            user.canonicalId = id == "deleted" ? "" : merges[id] ?? id
            return user
        }
        return response
    }

    func listRevocations(
        _ request: IdentityV1.ListRevocationsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListRevocationsResponse {
        guard !revocationFeedDown.load(ordering: .relaxed) else {
            throw RPCError.unavailable("identity's database is down")
        }
        let all = revokedSessions.withLock { $0 }
        let start = Int(min(UInt64(all.count), request.afterCursor))
        let page = all[start...].prefix(request.limit == 0 ? 1000 : Int(request.limit))
        let expiry = Int64(Date().timeIntervalSince1970 * 1000) + 960_000
        return IdentityV1.ListRevocationsResponse(
            revocations: page.map {
                IdentityV1.Revocation(
                    sessionId: $0.session, expiresAtUnixMs: $0.expiresAt ?? expiry, mergedUserId: $0.mergedUser)
            },
            cursor: UInt64(start + page.count), more: start + page.count < all.count)
    }

    func beginAdminCall(
        _ request: IdentityV1.BeginAdminCallRequest, context: RequestContext
    ) async throws -> IdentityV1.BeginAdminCallResponse {
        guard !auditDown.load(ordering: .relaxed) else { throw RPCError.unavailable("identity's database is down") }
        let count = auditEntries.withLock { entries in
            entries.append(request)
            return entries.count
        }
        return IdentityV1.BeginAdminCallResponse(eventId: String(count))
    }

    func finishAdminCall(
        _ request: IdentityV1.FinishAdminCallRequest, context: RequestContext
    ) async throws -> IdentityV1.FinishAdminCallResponse {
        auditOutcomes.withLock { $0[request.eventId] = request.statusCode }
        return IdentityV1.FinishAdminCallResponse()
    }

    func listAllowedOrigins(
        _ request: IdentityV1.ListAllowedOriginsRequest, context: RequestContext
    ) async throws -> IdentityV1.ListAllowedOriginsResponse {
        guard !allowedOriginsDown.load(ordering: .relaxed) else {
            throw RPCError.unavailable("identity's database is down")
        }
        return IdentityV1.ListAllowedOriginsResponse(origins: allowedOrigins.withLock { $0 })
    }

    func getUsers(
        _ request: IdentityV1.GetUsersRequest, context: RequestContext
    ) async throws -> IdentityV1.GetUsersResponse {
        throw RPCError.unimplemented("not needed by the gateway tests")
    }

    func lookupExternal(
        _ request: IdentityV1.LookupExternalRequest, context: RequestContext
    ) async throws -> IdentityV1.LookupExternalResponse {
        throw RPCError.unimplemented("not needed by the gateway tests")
    }

    func usedApplications(
        _ request: IdentityV1.UsedApplicationsRequest, context: RequestContext
    ) async throws -> IdentityV1.UsedApplicationsResponse {
        throw RPCError.unimplemented("not needed by the gateway tests")
    }

    func getApplications(
        _ request: IdentityV1.GetApplicationsRequest, context: RequestContext
    ) async throws -> IdentityV1.GetApplicationsResponse {
        throw RPCError.unimplemented("not needed by the gateway tests")
    }

    func findUsers(
        _ request: IdentityV1.FindUsersRequest, context: RequestContext
    ) async throws -> IdentityV1.FindUsersResponse {
        throw RPCError.unimplemented("not needed by the gateway tests")
    }
}

/// Echo with a twist: the payload "whoami" answers with the caller and client address the service saw, "whichadmin"
/// with the admin credential's name (`rave-caller-admin`).
final class TestEcho: EchoV1.EchoHandler {
    /// Calls that saw their task cancelled (the client cancelled through the gateway).
    let cancelledCalls = Atomic<Int>(0)
    /// The timeouts (ms) the service saw, to check deadline propagation.
    let remainingMilliseconds = Mutex<[UInt64]>([])

    func echo(_ request: EchoV1.EchoRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        remainingMilliseconds.withLock { $0.append(context.remainingNanoseconds / 1_000_000) }
        if request.payload == Array("whichadmin".utf8) {
            return EchoV1.EchoResponse(payload: Array((context.metadata[MetadataKey.callerAdmin] ?? "-").utf8))
        }
        guard request.payload == Array("whoami".utf8) else { return EchoV1.EchoResponse(payload: request.payload) }
        let caller = context.caller
        let text = [
            caller?.userID ?? "-", caller?.appID ?? "-", caller?.sessionID ?? "-",
            caller.map { $0.scopes.sorted().joined(separator: " ") } ?? "-",
            context.metadata["rave-client-address"] ?? "-", context.metadata[MetadataKey.authorization] ?? "-",
        ].joined(separator: "|")
        return EchoV1.EchoResponse(payload: Array(text.utf8))
    }

    /// EchoAfterDelay calls running now, and the most that ever ran at once (proves a fan-out is parallel).
    let delayedCalls = Mutex<(running: Int, most: Int)>((0, 0))

    func echoAfterDelay(
        _ request: EchoV1.EchoAfterDelayRequest, context: RequestContext
    ) async throws -> EchoV1.EchoResponse {
        delayedCalls.withLock { calls in
            calls.running += 1
            calls.most = max(calls.most, calls.running)
        }
        defer { delayedCalls.withLock { $0.running -= 1 } }
        do {
            try await Task.sleep(for: .milliseconds(Int(request.delayMs)))
        } catch {
            cancelledCalls.wrappingAdd(1, ordering: .relaxed)
            throw error
        }
        return EchoV1.EchoResponse(payload: request.payload)
    }

    func fail(_ request: EchoV1.FailRequest, context: RequestContext) async throws -> EchoV1.EchoResponse {
        throw RPCError(request.code, request.message)
    }
}
