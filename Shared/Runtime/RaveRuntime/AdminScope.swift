import RaveGatewayRules
import RavePostgres
import RaveRPC
import RaveServices
import Synchronization

/// Who makes an admin call, as a service other than identity establishes it from the gateway's metadata: the admin
/// certificate (every method, every publisher) or an operator account with a role and a publisher scope.
public struct AdminCaller: Sendable, Hashable {
    /// The operator's id; nil for the admin certificate.
    public var operatorID: String?
    /// The operator's role and publisher scope; nil for the admin certificate.
    public var grant: OperatorToken.Grant?

    /// The publisher the caller is limited to; nil when it acts for every publisher (the admin certificate, an
    /// owner of all publishers).
    public var publisherID: String? { grant?.publisherID }
}

extension RequestContext {
    /// The admin caller, or the refusal: the admin scope (the gateway's), and for an operator a known role that
    /// reaches the method in `AdminRoles` and a publisher scope, checked here again whatever the gateway decided.
    ///
    /// A call without operator metadata is the admin certificate's (only the gateway may send caller metadata, and
    /// it sends the operator's on every call made with an operator token).
    public func requireAdminCaller() throws(RPCError) -> AdminCaller {
        _ = try requireAdmin()
        let operatorID = metadata[MetadataKey.callerOperator]
        let roleName = metadata[MetadataKey.callerOperatorRole]
        let scope = metadata[MetadataKey.callerOperatorPublisher]
        guard operatorID != nil || roleName != nil || scope != nil else {
            return AdminCaller(operatorID: nil, grant: nil)
        }
        guard let operatorID, !operatorID.isEmpty else {
            throw .permissionDenied("this admin call names an operator role or publisher but no operator")
        }
        guard let roleName, let role = OperatorRole(name: roleName) else {
            throw .permissionDenied(
                "\(RequestChecks.quoted(roleName ?? "")) is not an operator role (viewer, support, operator, owner)")
        }
        let publisherID: String?
        switch scope {
        case OperatorToken.allPublishers?: publisherID = nil
        case let scope? where RaveID(wire: scope) != nil: publisherID = scope
        default:
            throw .permissionDenied(
                "the operator's publisher scope must be a publisher id or \"*\", got \(RequestChecks.quoted(scope ?? ""))"
            )
        }
        // Only an owner may act for every publisher (docs/identity.md, "Publisher scope").
        guard publisherID != nil || role == .owner else {
            throw .permissionDenied("only an owner may act for all publishers; this operator's role is \(role)")
        }
        if let refusal = AdminRoles.refusal(method: method, role: role) { throw .permissionDenied(refusal) }
        return AdminCaller(operatorID: operatorID, grant: OperatorToken.Grant(role: role, publisherID: publisherID))
    }
}

/// The publisher scope of admin calls in the services other than identity (docs/identity.md, "Publisher scope"):
/// an operator of one publisher reaches only that publisher's applications, the admin certificate and owners of
/// all publishers reach every one.
///
/// Which publisher an application belongs to comes from identity (`IdentityInternal/GetApplications`, over the
/// service's own mTLS client) and is kept for `lifetime`; an application never changes publisher, so the limit only
/// bounds what a process remembers.
public final class AdminScope: Sendable {
    /// The most applications remembered (`ExpiringMap`: past it, expired entries go, then all).
    public static let capacity = 10_000

    private let identity: IdentityV1.IdentityInternalClient?
    private let peerName: String
    private let timeout: Duration
    private let lifetime: Duration
    private let publishers = Mutex(ExpiringMap<RaveID, String>(capacity: AdminScope.capacity))

    /// A scope that asks `identity`, a client of the identity service, for applications' publishers.
    ///
    /// Nil where the service runs without identity: then operators limited to a publisher are refused (UNAVAILABLE)
    /// and every other admin caller is served. `setting` names the variable that configures it, for that refusal.
    public init(
        identity: (any RPCCaller)?, setting: String, timeout: Duration = .seconds(5),
        lifetime: Duration = .seconds(300)
    ) {
        self.identity = identity.map { IdentityV1.IdentityInternalClient(caller: $0) }
        self.peerName = setting
        self.timeout = timeout
        self.lifetime = lifetime
    }

    /// The admin caller of `context` when it may act for application `applicationID` (the request's `field`), else
    /// the refusal: `requireAdminCaller`'s, INVALID_ARGUMENT for a malformed id, NOT_FOUND for an application identity
    /// does not know, PERMISSION_DENIED for another publisher's.
    ///
    /// The admin certificate and owners of all publishers are not looked up: the method answers for the application
    /// as it did before.
    @discardableResult
    public func requireScope(
        _ context: RequestContext, applicationID: String, field: String = "app_id"
    ) async throws -> AdminCaller {
        let caller = try context.requireAdminCaller()
        guard let scoped = caller.publisherID else { return caller }
        let app = try RequestChecks.raveID(applicationID, field: field)
        let publisher = try await publisher(of: app)
        guard publisher == scoped else {
            throw RPCError.permissionDenied(
                "this operator acts for publisher \(scoped) only; application \(app.hex) belongs to publisher "
                    + publisher)
        }
        return caller
    }

    /// The admin caller of `context` when it acts for every publisher, else PERMISSION_DENIED: for what is shared by
    /// all publishers (`what`, "wallet currencies").
    @discardableResult
    public func requireAllPublishers(_ context: RequestContext, what: String) throws(RPCError) -> AdminCaller {
        let caller = try context.requireAdminCaller()
        if let scoped = caller.publisherID {
            throw .permissionDenied(
                "\(what) are shared by every publisher: changing them needs an owner of all publishers or the admin "
                    + "certificate; this operator acts for publisher \(scoped)")
        }
        return caller
    }

    /// The publisher of `app` (32 hex digits), from memory or identity; NOT_FOUND for an unknown application.
    public func publisher(of app: RaveID) async throws -> String {
        let now = ContinuousClock.now
        if let known = publishers.withLock({ $0.value(for: app, at: now) }) { return known }
        guard let identity else {
            throw RPCError.unavailable(
                "an operator's publisher scope cannot be checked: this service has no identity service configured "
                    + "(\(peerName)); use the admin certificate or an owner of all publishers")
        }
        let response = try await identity.getApplications(
            .init(appIds: [app.hex]), options: CallOptions(timeout: timeout))
        guard let application = response.applications.first(where: { $0.appId == app.hex }) else {
            throw RPCError.notFound("no application \(app.hex)")
        }
        guard RaveID(wire: application.publisherId) != nil else {
            throw RPCError.unavailable("identity returned no publisher for application \(app.hex)")
        }
        publishers.withLock { $0.insert(application.publisherId, for: app, until: now + lifetime, now: now) }
        return application.publisherId
    }
}
