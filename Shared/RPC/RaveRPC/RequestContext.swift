import RaveTelemetry
import RaveTransport

/// Well-known request metadata keys (see docs/PROTOCOL.md).
public enum MetadataKey {
    public static let authorization = "authorization"
    public static let traceID = "trace-id"
    public static let idempotencyKey = "idempotency-key"
    /// Caller identity, set by the gateway; accepted only from a peer with the gateway role (`AccessPolicy`).
    public static let callerUserID = "rave-caller-user-id"
    public static let callerAppID = "rave-caller-app-id"
    public static let callerSessionID = "rave-caller-session-id"
    public static let callerScopes = "rave-caller-scopes"
    /// The name of the admin credential a call was made with (the admin client certificate's common name), set by
    /// the gateway on calls that carry the admin scope, so services can record who acted (identity's audit log).
    public static let callerAdmin = "rave-caller-admin"
    /// The operator account an admin call was made with (its id), its role and its publisher scope (a publisher's
    /// id, or "*" for every publisher), set by the gateway from the operator's access token.
    public static let callerOperator = "rave-caller-operator"
    public static let callerOperatorRole = "rave-caller-operator-role"
    public static let callerOperatorPublisher = "rave-caller-operator-publisher"
    /// Why an operator makes an admin write, for the audit log; sent by the client and passed on as it is.
    public static let reason = "rave-reason"
    /// The client's IP address as the gateway saw it, for services' per-address limits.
    public static let clientAddress = "rave-client-address"
    /// Every key that asserts who calls: only the gateway may send them (`AccessPolicy.callerMetadataFrom`).
    public static let callerAssertions = [
        callerUserID, callerAppID, callerSessionID, callerScopes, callerAdmin, callerOperator, callerOperatorRole,
        callerOperatorPublisher, clientAddress,
    ]
}

/// Who is calling, as established by the gateway (or an admin credential).
public struct Caller: Hashable, Sendable {
    public var userID: String
    public var appID: String
    public var sessionID: String
    public var scopes: Set<String>

    public init(userID: String, appID: String, sessionID: String, scopes: Set<String>) {
        self.userID = userID
        self.appID = appID
        self.sessionID = sessionID
        self.scopes = scopes
    }

    /// The scope operators' and game servers' admin credentials carry.
    public static let adminScope = "admin"
    /// A scope no caller is ever given; the gateway strips it from tokens, so nothing may rely on it.
    public static let serviceScope = "service"
    /// Every player access token carries it.
    public static let playerScope = "player"
    /// The player's account is anonymous (a guest: no personal data, no credential).
    public static let guestScope = "guest"
    /// The player's account has a credential (a password or a provider link).
    public static let authenticatedScope = "authenticated"
}

/// The TLS peer of a connection.
public struct PeerIdentity: Hashable, Sendable {
    /// The remote address ("127.0.0.1:53122").
    public var address: String
    /// The verified client certificate's subject common name, when the peer presented one (for logs only: the
    /// role decides what a peer may do).
    public var certificateCommonName: String?
    /// The role the verified certificate carries, nil without a certificate or without a role.
    public var role: PeerRole?

    public init(address: String, certificateCommonName: String?, role: PeerRole? = nil) {
        self.address = address
        self.certificateCommonName = certificateCommonName
        self.role = role
    }
}

/// Everything a handler knows about the call besides its request message.
///
/// Built for every call, and copied wherever a handler passes it on: its stored fields are few, and the ones
/// nearly no call reads (the request id's text, the metadata dictionary) are made only when read.
public struct RequestContext: Sendable {
    /// Unique per call; appears in every log line about it and in INTERNAL error messages.
    public var requestID: String {
        get { requestIDText ?? connection.requestID(number: requestNumber) }
        set { requestIDText = newValue }
    }
    /// The fully qualified method name.
    public var method: String
    /// When the caller stops waiting (monotonic nanoseconds, see `monotonicNanoseconds()`).
    public var deadline: UInt64
    /// Request metadata; a server call's is decoded from its entries the first time it is read.
    public var metadata: [String: String] {
        get { requestMetadata?.dictionary ?? [:] }
        set { requestMetadata = RequestMetadata(dictionary: newValue, encoded: encodedMetadata) }
    }
    public var peer: PeerIdentity {
        get { connection.peer }
        set { connection = connection.with(peer: newValue) }
    }
    /// The authenticated caller, from metadata of a trusted peer; nil for anonymous calls.
    public var caller: Caller?
    /// Logs with the call's `request_id`.
    public var logger: Logger {
        get { loggerAddsRequestID ? connection.logger.with("request_id", requestID) : connection.logger }
        set {
            connection = connection.with(logger: newValue)
            loggerAddsRequestID = false
        }
    }
    /// `metadata` as it arrived on the wire, for proxies that pass it on (empty when the call did not come
    /// from the network).
    public var encodedMetadata: EncodedMetadata {
        get { requestMetadata?.encoded ?? EncodedMetadata() }
        set { requestMetadata = RequestMetadata(dictionary: metadata, encoded: newValue) }
    }
    /// The peer, the logger and the request ids' prefix, shared by every call of a connection: one reference per
    /// call, not their strings.
    ///
    /// `logger` is the server's connection logger when `loggerAddsRequestID`, to which the request id is added
    /// each time a handler asks for it: most calls never log, and adding it costs an allocation.
    private var connection: ConnectionFacts
    private var loggerAddsRequestID = false
    /// A server call's number, whose text (`ConnectionFacts.requestID(number:)`) is made when first read.
    private var requestNumber: UInt64 = 0
    /// The request id given as text (every context not made by a server connection, or one a handler set).
    private var requestIDText: String?
    /// The metadata, as the dictionary a handler gave and the entries as they arrived; nil for none.
    private var requestMetadata: RequestMetadata?

    public init(
        requestID: String, method: String, deadline: UInt64, metadata: [String: String], peer: PeerIdentity,
        caller: Caller?, logger: Logger, encodedMetadata: EncodedMetadata = EncodedMetadata()
    ) {
        self.init(
            requestID: requestID, method: method, deadline: deadline, metadata: metadata,
            connection: ConnectionFacts(peer: peer, logger: logger), caller: caller, encodedMetadata: encodedMetadata)
    }

    /// A context whose `logger` is `connectionLogger` with the request id added when it is read.
    public init(
        requestID: String, method: String, deadline: UInt64, metadata: [String: String], peer: PeerIdentity,
        caller: Caller?, connectionLogger: Logger, encodedMetadata: EncodedMetadata = EncodedMetadata()
    ) {
        self.init(
            requestID: requestID, method: method, deadline: deadline, metadata: metadata,
            connection: ConnectionFacts(peer: peer, logger: connectionLogger), caller: caller,
            encodedMetadata: encodedMetadata)
        loggerAddsRequestID = true
    }

    private init(
        requestID: String, method: String, deadline: UInt64, metadata: [String: String],
        connection: ConnectionFacts, caller: Caller?, encodedMetadata: EncodedMetadata
    ) {
        self.requestIDText = requestID
        self.method = method
        self.deadline = deadline
        self.requestMetadata = RequestMetadata(dictionary: metadata, encoded: encodedMetadata)
        self.connection = connection
        self.caller = caller
    }

    /// A context of call `requestNumber` on a server connection, whose facts it shares; `logger` adds the request
    /// id.
    init(
        requestNumber: UInt64, method: String, deadline: UInt64, metadata: RequestMetadata?,
        connection: ConnectionFacts, caller: Caller?
    ) {
        self.requestNumber = requestNumber
        self.method = method
        self.deadline = deadline
        self.requestMetadata = metadata
        self.connection = connection
        self.caller = caller
        loggerAddsRequestID = true
    }

    /// Nanoseconds until the deadline (0 once it has passed).
    public var remainingNanoseconds: UInt64 {
        let now = monotonicNanoseconds()
        return deadline > now ? deadline - now : 0
    }

    /// The caller, or UNAUTHENTICATED.
    public func requireCaller() throws(RPCError) -> Caller {
        guard let caller else { throw .unauthenticated("this method needs an authenticated caller") }
        return caller
    }

    /// The calling user, or UNAUTHENTICATED.
    public func requireUser() throws(RPCError) -> Caller {
        let caller = try requireCaller()
        guard !caller.userID.isEmpty else { throw .unauthenticated("this method needs a signed-in user") }
        return caller
    }

    /// The caller if it holds the admin scope, else PERMISSION_DENIED.
    public func requireAdmin() throws(RPCError) -> Caller {
        let caller = try requireCaller()
        guard caller.scopes.contains(Caller.adminScope) else {
            throw .permissionDenied("this method needs an admin credential")
        }
        return caller
    }
}

/// What every call of one connection shares in its `RequestContext`: who the peer is, the connection's logger, and
/// the server's request id prefix.
final class ConnectionFacts: Sendable {
    let peer: PeerIdentity
    let logger: Logger
    /// The UTF-8 of the server's request id prefix (`RequestIDs`); empty outside a server.
    let requestIDPrefix: [UInt8]

    init(peer: PeerIdentity, logger: Logger, requestIDPrefix: [UInt8] = []) {
        self.peer = peer
        self.logger = logger
        self.requestIDPrefix = requestIDPrefix
    }

    func with(peer: PeerIdentity) -> ConnectionFacts {
        ConnectionFacts(peer: peer, logger: logger, requestIDPrefix: requestIDPrefix)
    }

    func with(logger: Logger) -> ConnectionFacts {
        ConnectionFacts(peer: peer, logger: logger, requestIDPrefix: requestIDPrefix)
    }

    /// The text of request `number` of this connection's server.
    func requestID(number: UInt64) -> String {
        RequestIDs.text(prefix: requestIDPrefix, number: number)
    }
}
