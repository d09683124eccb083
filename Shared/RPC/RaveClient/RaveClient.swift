import Glibc
import RaveMessages
import RaveRPC
import RaveServices
import RaveTransport
import Synchronization

/// A game server's or test's connection to the Rave gateway: sign in once, then call any method (typed clients
/// take it as their caller) and send batches; the access token is refreshed before it expires.
///
/// ```swift
/// let rave = RaveClient(host: "127.0.0.1", port: 7443, tls: tls, group: group)
/// try await rave.loginAsGuest(appID: "app-1", deviceID: "device-1")
/// let wallet = WalletV1.WalletClient(caller: rave)
/// let balances = try await wallet.getWallet(WalletV1.GetWalletRequest())
/// ```
public final class RaveClient: RPCCaller {
    /// How long before its expiry an access token is refreshed (default 60 s).
    public let refreshMargin: Duration
    private let connections: RPCClient
    private let session = Mutex<SessionState>(SessionState())

    private struct SessionState {
        var tokens: IdentityV1.SessionTokens?
        /// The refresh under way, which concurrent callers share instead of each spending the refresh token.
        var refresh: Task<IdentityV1.SessionTokens, any Error>?
    }

    /// Prepares a client of the gateway at host:port; connections open on the first call.
    public init(
        host: String, port: Int, tls: TLSContext, group: EventLoopGroup, refreshMargin: Duration = .seconds(60),
        configuration: RPCClient.Configuration = RPCClient.Configuration()
    ) {
        self.refreshMargin = refreshMargin
        connections = RPCClient(host: host, port: port, tls: tls, group: group, configuration: configuration)
    }

    /// The session's tokens, nil before a login.
    public var tokens: IdentityV1.SessionTokens? { session.withLock { $0.tokens } }

    /// Signs in as the device's guest user of `appID`.
    @discardableResult
    public func loginAsGuest(appID: String, deviceID: String) async throws(RPCError) -> IdentityV1.LoginResponse {
        var request = IdentityV1.GuestLoginRequest()
        request.appId = appID
        request.device = IdentityV1.DeviceInfo(deviceId: deviceID)
        return try adopt(try await IdentityV1.IdentityClient(caller: connections).guestLogin(request))
    }

    /// Signs in with email and password; a login that needs a second factor returns its challenge and no
    /// session starts until `adopt` gets the response of CompleteTwoFactorLogin.
    @discardableResult
    public func login(
        appID: String, deviceID: String, email: String, password: String
    ) async throws(RPCError) -> IdentityV1.LoginResponse {
        var request = IdentityV1.LoginWithPasswordRequest()
        request.appId = appID
        request.device = IdentityV1.DeviceInfo(deviceId: deviceID)
        request.email = email
        request.password = password
        return try adopt(try await IdentityV1.IdentityClient(caller: connections).loginWithPassword(request))
    }

    /// Starts using the tokens of a login made some other way (sign-up, provider, two-factor).
    @discardableResult
    public func adopt(_ response: IdentityV1.LoginResponse) throws(RPCError) -> IdentityV1.LoginResponse {
        if case .tokens(let tokens) = response.outcome { adopt(tokens) }
        return response
    }

    /// Starts using `tokens` (restored from storage, say).
    public func adopt(_ tokens: IdentityV1.SessionTokens) {
        session.withLock { $0.tokens = tokens }
    }

    /// Forgets the session; later calls go out without a token.
    public func forgetSession() {
        session.withLock { $0 = SessionState() }
    }

    /// Sends one call with the session's access token, refreshing it first when it is about to expire.
    public func call(method: String, request: [UInt8], options: CallOptions) async throws(RPCError) -> [UInt8] {
        var options = options
        if let token = try await currentAccessToken() {
            options.metadata[MetadataKey.authorization] = "Bearer \(token)"
        }
        return try await connections.call(method: method, request: request, options: options)
    }

    /// Sends a batch (docs/gateway.md) and returns one result per call, in request order.
    public func batch(
        _ calls: [GatewayV1.BatchCall], options: CallOptions = CallOptions()
    ) async throws(RPCError) -> [GatewayV1.BatchResult] {
        var request = GatewayV1.BatchRequest()
        request.calls = calls
        let response = try await call(
            method: "rave.gateway.v1.Gateway/Batch", request: request.protobufBytes(), options: options)
        do {
            return try GatewayV1.BatchResponse(protobufBytes: response).results
        } catch {
            throw RPCError(.internal, "the gateway's Batch response does not decode: \(error)")
        }
    }

    /// Closes the connections.
    public func close() {
        connections.close()
    }

    // MARK: - Tokens

    /// The access token to send, refreshed first when it expires within `refreshMargin`; nil without a session.
    private func currentAccessToken() async throws(RPCError) -> String? {
        let now = Self.unixMilliseconds()
        let margin = Int64(refreshMargin.components.seconds * 1000)
        let (token, refresh) = session.withLock { state -> (String?, Task<IdentityV1.SessionTokens, any Error>?) in
            guard let tokens = state.tokens else { return (nil, nil) }
            if tokens.accessTokenExpiresAtUnixMs - margin > now || tokens.refreshToken.isEmpty {
                return (tokens.accessToken, nil)
            }
            if let running = state.refresh { return (nil, running) }
            let task = Task { [connections] in
                var request = IdentityV1.RefreshSessionRequest()
                request.refreshToken = tokens.refreshToken
                let response = try await IdentityV1.IdentityClient(caller: connections).refreshSession(request)
                guard let fresh = response.tokens else {
                    throw RPCError(.internal, "RefreshSession answered without tokens")
                }
                return fresh
            }
            state.refresh = task
            return (nil, task)
        }
        guard let refresh else { return token }
        do {
            let fresh = try await refresh.value
            session.withLock { state in
                state.tokens = fresh
                state.refresh = nil
            }
            return fresh.accessToken
        } catch {
            session.withLock { $0.refresh = nil }
            throw error as? RPCError ?? RPCError(.unavailable, "refreshing the session failed: \(error)")
        }
    }

    private static func unixMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}
