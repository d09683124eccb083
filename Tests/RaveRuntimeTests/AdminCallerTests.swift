import RaveRPC
import RaveRuntime
import RaveTelemetry
import Testing

/// `requireAdminCaller`: how a service reads the admin caller from the gateway's metadata, and what it refuses
/// whatever the gateway let through (docs/identity.md, "What is enforced where").
@Suite("Admin caller")
struct AdminCallerTests {
    static let publisher = "0123456789abcdef0123456789abcdef"
    static let write = "rave.leaderboards.v1.LeaderboardsAdmin/DefineLeaderboard"
    static let read = "rave.gifts.v1.GiftsAdmin/ListGiftTypes"

    static func context(
        _ method: String = write, scopes: Set<String> = [Caller.adminScope], metadata: [String: String]
    ) -> RequestContext {
        RequestContext(
            requestID: "test", method: method, deadline: .max, metadata: metadata,
            peer: PeerIdentity(address: "127.0.0.1:1", certificateCommonName: "gateway"),
            caller: Caller(userID: "", appID: "", sessionID: "", scopes: scopes), logger: Logger(label: "test"))
    }

    static func operatorMetadata(role: String?, publisher: String?, id: String? = "op-1") -> [String: String] {
        var metadata: [String: String] = [:]
        metadata[MetadataKey.callerOperator] = id
        metadata[MetadataKey.callerOperatorRole] = role
        metadata[MetadataKey.callerOperatorPublisher] = publisher
        return metadata
    }

    static func refusal(_ context: RequestContext) -> RPCError? {
        do {
            _ = try context.requireAdminCaller()
            return nil
        } catch {
            return error
        }
    }

    @Test func withoutOperatorMetadataTheCallerIsTheAdminCertificate() throws {
        let caller = try Self.context(metadata: [:]).requireAdminCaller()
        #expect(caller.operatorID == nil && caller.grant == nil && caller.publisherID == nil)
    }

    @Test func anOperatorCarriesItsRoleAndPublisher() throws {
        let scoped = try Self.context(metadata: Self.operatorMetadata(role: "operator", publisher: Self.publisher))
            .requireAdminCaller()
        #expect(scoped.operatorID == "op-1")
        #expect(scoped.publisherID == Self.publisher)
        let owner = try Self.context(metadata: Self.operatorMetadata(role: "owner", publisher: "*"))
            .requireAdminCaller()
        #expect(owner.grant?.role.description == "owner" && owner.publisherID == nil)
        let viewer = try Self.context(
            Self.read, metadata: Self.operatorMetadata(role: "viewer", publisher: Self.publisher)
        )
        .requireAdminCaller()
        #expect(viewer.grant?.role.description == "viewer")
    }

    @Test func aCallWithoutTheAdminScopeIsRefused() {
        let refused = Self.refusal(Self.context(scopes: [Caller.playerScope], metadata: [:]))
        #expect(refused?.code == .permissionDenied)
        #expect(refused?.message == "this method needs an admin credential")
    }

    @Test func incompleteOrForgedOperatorMetadataIsRefused() {
        let cases: [([String: String], String)] = [
            (
                Self.operatorMetadata(role: "owner", publisher: "*", id: nil),
                "this admin call names an operator role or publisher but no operator"
            ),
            (
                Self.operatorMetadata(role: nil, publisher: Self.publisher),
                "\"\" is not an operator role (viewer, support, operator, owner)"
            ),
            (
                Self.operatorMetadata(role: "Owner", publisher: Self.publisher),
                "\"Owner\" is not an operator role (viewer, support, operator, owner)"
            ),
            (
                Self.operatorMetadata(role: "operator", publisher: nil),
                "the operator's publisher scope must be a publisher id or \"*\", got \"\""
            ),
            (
                Self.operatorMetadata(role: "operator", publisher: Self.publisher.uppercased()),
                "the operator's publisher scope must be a publisher id or \"*\", got \"\(Self.publisher.uppercased())\""
            ),
            (
                Self.operatorMetadata(role: "operator", publisher: "*"),
                "only an owner may act for all publishers; this operator's role is operator"
            ),
            (
                Self.operatorMetadata(role: "support", publisher: Self.publisher),
                "\(Self.write) needs the operator role operator or higher; this operator's role is support"
            ),
        ]
        for (metadata, message) in cases {
            let refused = Self.refusal(Self.context(metadata: metadata))
            #expect(refused?.code == .permissionDenied, "\(metadata)")
            #expect(refused?.message == message)
        }
        // A method AdminRoles does not classify is the admin certificate's alone.
        let unclassified = Self.refusal(
            Self.context(
                "rave.gifts.v1.GiftsAdmin/NotYetClassified",
                metadata: Self.operatorMetadata(role: "owner", publisher: "*")))
        #expect(unclassified?.message.contains("is not open to operator accounts") == true)
    }

    @Test func withoutIdentityOnlyOperatorsOfOnePublisherAreRefused() async throws {
        let scope = AdminScope(identity: nil, setting: "RAVE_TEST_IDENTITY_ADDRESS")
        let app = "fedcba9876543210fedcba9876543210"
        try await scope.requireScope(Self.context(metadata: [:]), applicationID: app)
        try await scope.requireScope(
            Self.context(metadata: Self.operatorMetadata(role: "owner", publisher: "*")), applicationID: app)
        let scoped = Self.context(metadata: Self.operatorMetadata(role: "operator", publisher: Self.publisher))
        await #expect {
            try await scope.requireScope(scoped, applicationID: app)
        } throws: { error in
            (error as? RPCError)?.code == .unavailable
                && (error as? RPCError)?.message.contains("(RAVE_TEST_IDENTITY_ADDRESS)") == true
        }
        await #expect {
            try await scope.requireScope(scoped, applicationID: "not-an-id")
        } throws: { error in
            (error as? RPCError)?.message == "app_id must be 32 lowercase hex digits, got \"not-an-id\""
        }
    }
}
