import Foundation
import Glibc
import RaveMessages
import RaveServices
import RaveTelemetry
import RaveTransport
import Synchronization
import Testing

@testable import RaveRPC

/// Peer roles from certificates, and the backend's trust model applied to every kind of peer over real mTLS.
@Suite("Access policy")
struct AccessPolicyTests {
    // MARK: - Roles

    @Test(arguments: [
        ("rave://gateway", PeerRole.gateway), ("rave://admin", .admin), ("rave://client", .client),
        ("rave://service/wallet", .service("wallet")), ("rave://service/push-2", .service("push-2")),
    ])
    func roleURIsName(uri: String, role: PeerRole) {
        #expect(PeerRole(uri: uri) == role)
        #expect(role.uri == uri)
    }

    @Test(arguments: [
        "rave://", "rave://Gateway", "rave://gateway/", "rave://service/", "rave://service/Wallet",
        "rave://service/a/b", "rave://operator", "https://gateway", "rave:/gateway", "spiffe://rave/gateway",
        "rave://service/" + String(repeating: "a", count: 64),
    ])
    func otherURIsNameNoRole(uri: String) {
        #expect(PeerRole(uri: uri) == nil)
    }

    @Test func aCertificateHasOneRoleOrNone() {
        func role(_ uris: [String]) -> PeerRole? { PeerRole(certificate: PeerCertificate(commonName: "x", uris: uris)) }
        #expect(role(["https://example.com/x", "rave://service/wallet"]) == .service("wallet"))
        #expect(role(["rave://gateway", "rave://gateway"]) == .gateway)
        // Two roles are no role: a certificate must not be both a service and the gateway.
        #expect(role(["rave://service/wallet", "rave://gateway"]) == nil)
        // A rave:// URI that is not a role spoils the rest: no guessing which one was meant.
        #expect(role(["rave://gateway", "rave://superuser"]) == nil)
        #expect(role([]) == nil)
        #expect(PeerRole(certificate: nil) == nil)
    }

    // MARK: - The matrix

    /// Every certificate kind the matrix tries, and no certificate at all.
    static let peers: [String?] = [
        "gateway", "admin", "client", "identity", "social", "leaderboards", "gifts", "push", "wallet", "no-role",
        nil,
    ]

    /// One method of each group, and the peers that may call it, written out by hand (not read from TrustModel:
    /// the test states the trust model the documentation promises).
    static let groups: [(method: String, allowed: Set<String>)] = [
        ("rave.wallet.v1.Wallet/GetWallet", ["gateway"]),
        ("rave.wallet.v1.WalletAdmin/Deposit", ["gateway"]),
        ("rave.gifts.v1.GiftsInstall/ResolveInstallLink", ["gateway"]),
        ("rave.merge.v1.MergeParticipant/MergeUsers", ["identity"]),
        ("rave.events.v1.EventSink/DeliverEvents", ["identity", "social", "leaderboards", "gifts"]),
        ("rave.identity.v1.IdentityInternal/SigningKeys", ["gateway", "social", "leaderboards", "gifts", "wallet"]),
        // A method narrower than its block: only the gateway reads the allowed web origins.
        ("rave.identity.v1.IdentityInternal/ListAllowedOrigins", ["gateway"]),
        // A method with a caller its block lacks: push asks which publisher an operator's application belongs to.
        ("rave.identity.v1.IdentityInternal/GetApplications", ["social", "leaderboards", "gifts", "push", "wallet"]),
        ("rave.social.v1.SocialInternal/IsBlocked", ["identity", "leaderboards", "gifts"]),
        ("rave.leaderboards.v1.LeaderboardsInternal/ListBoardOwners", ["gateway"]),
        ("rave.push.v1.PushInternal/SendNotification", ["identity", "social", "leaderboards", "gifts", "wallet"]),
    ]

    @Test(arguments: peers)
    func everyPeerKindReachesExactlyItsMethodGroups(peer: String?) async throws {
        try await MatrixServer.with { server in
            let connection = try await server.connect(as: peer)
            defer { connection.close() }
            for group in Self.groups {
                let expected: StatusCode = peer.map { group.allowed.contains($0) } == true ? .ok : .permissionDenied
                let code = await Self.code(of: group.method, on: connection)
                #expect(code == expected, "\(peer ?? "no certificate") calling \(group.method)")
            }
            // Health answers everyone: load balancers and probes carry no role.
            let health = try await connection.call(
                method: "rave.rpc.v1.Health/Check", request: RpcV1.HealthCheckRequest().protobufBytes(),
                options: CallOptions())
            #expect(try RpcV1.HealthCheckResponse(protobufBytes: health).status == .serving)
        }
    }

    @Test(arguments: peers.filter { $0 != "gateway" })
    func callerMetadataIsRefusedFromEveryPeerButTheGateway(peer: String?) async throws {
        try await MatrixServer.with { server in
            let connection = try await server.connect(as: peer)
            defer { connection.close() }
            // The method the peer may call, so only the metadata can be the reason.
            let method =
                Self.groups.first { group in peer.map { group.allowed.contains($0) } == true }?.method
                ?? "rave.rpc.v1.Health/Check"
            for key in MetadataKey.callerAssertions {
                let options = CallOptions(metadata: [key: "0123456789abcdef0123456789abcdef"], maxRetries: 0)
                let error = await #expect(throws: RPCError.self) {
                    _ = try await connection.call(method: method, request: [], options: options)
                }
                #expect(error?.code == .permissionDenied, "\(peer ?? "no certificate") sending \(key)")
                #expect(error?.message.contains("accepted only from gateway") == true)
            }
        }
    }

    /// A method with a rule of its own is refused by name, while the rest of its block stays open to the block's
    /// callers.
    @Test func aMethodRuleNarrowsItsBlockAndNamesTheMethod() async throws {
        try await MatrixServer.with { server in
            let connection = try await server.connect(as: "social")
            defer { connection.close() }
            let error = await #expect(throws: RPCError.self) {
                _ = try await connection.call(
                    method: "rave.identity.v1.IdentityInternal/ListAllowedOrigins", request: [],
                    options: CallOptions(maxRetries: 0))
            }
            #expect(error?.code == .permissionDenied)
            #expect(
                error?.message
                    == "rave.identity.v1.IdentityInternal/ListAllowedOrigins may be called only by gateway; this "
                    + "peer's certificate has the role service/social")
            #expect(await Self.code(of: "rave.identity.v1.IdentityInternal/SigningKeys", on: connection) == .ok)
        }
    }

    @Test func theGatewaysCallerMetadataReachesTheHandler() async throws {
        try await MatrixServer.with { server in
            let connection = try await server.connect(as: "gateway")
            defer { connection.close() }
            let answer = try await connection.call(
                method: "rave.wallet.v1.Wallet/GetWallet", request: [],
                options: CallOptions(metadata: [
                    MetadataKey.callerUserID: "u1", MetadataKey.callerAppID: "a1", MetadataKey.callerScopes: "player",
                    MetadataKey.clientAddress: "10.0.0.1",
                ]))
            #expect(String(decoding: answer, as: UTF8.self) == "gateway|u1|a1|player")
        }
    }

    private static func code(of method: String, on connection: RPCConnection) async -> StatusCode {
        do {
            _ = try await connection.call(method: method, request: [], options: CallOptions(maxRetries: 0))
            return .ok
        } catch {
            return error.code
        }
    }
}

/// A server with the backend trust model serving one method of every group; each answers
/// "<role>|<user>|<app>|<scopes>" of its caller.
private final class MatrixServer: Sendable {
    let group: EventLoopGroup
    let server: RPCServer
    let directory: String

    private init(directory: String) throws {
        self.directory = directory
        group = try EventLoopGroup(loopCount: 1)
        // Asks for a certificate without requiring one, so peers without one reach the policy (a real service
        // port refuses them in the handshake already).
        var tls = TLSConfiguration.server(
            certificateChainPath: "\(directory)/wallet.pem", privateKeyPath: "\(directory)/wallet-key.pem",
            trustRootsPath: "\(directory)/ca.pem")
        tls.requestClientCertificate = true
        server = RPCServer(
            services: [Probe(methods: AccessPolicyTests.groups.map(\.method))], access: TrustModel.backend,
            tls: try TLSContext(tls), group: group, logger: Logger(label: "test.server", level: .critical))
        try server.start()
    }

    static func with(_ body: (MatrixServer) async throws -> Void) async throws {
        let server = try MatrixServer(directory: try certificates.get())
        defer {
            server.group.shutdown()
        }
        try await body(server)
        await server.server.shutdown()
    }

    func connect(as name: String?) async throws -> RPCConnection {
        let tls = try TLSContext(
            .client(
                trustRootsPath: "\(directory)/ca.pem", certificateChainPath: name.map { "\(directory)/\($0).pem" },
                privateKeyPath: name.map { "\(directory)/\($0)-key.pem" }))
        return try await RPCConnection.connect(
            host: "127.0.0.1", port: server.localPort, tls: tls, group: group,
            logger: Logger(label: "test.client", level: .critical))
    }

    /// The certificates of every peer kind, written once per test process and removed at exit.
    private static let certificates = Result { () throws -> String in
        var template = Array("/tmp/rave-rpc-roles-XXXXXX".utf8CString)
        guard let path = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
        let directory = String(cString: path)
        try DevelopmentCertificates.write(
            to: directory, services: AccessPolicyTests.peers.compactMap { $0 }, withoutRole: ["no-role"])
        removedAtExit.withLock { $0 = directory }
        atexit {
            if let directory = MatrixServer.removedAtExit.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        return directory
    }

    private static let removedAtExit = Mutex<String?>(nil)
}

/// Serves the given method names, answering with what the server told the handler about its caller.
private struct Probe: RPCService {
    static let serviceName = "rave.test.v1.Probe"
    let names: [String]

    init(methods: [String]) { names = methods }

    var methods: [RPCMethod] {
        names.map { name in
            RPCMethod(name: name) { _, context in
                let caller = context.caller
                let scopes = caller?.scopes.sorted().joined(separator: " ") ?? ""
                return Array(
                    "\(context.peer.role?.description ?? "-")|\(caller?.userID ?? "-")|\(caller?.appID ?? "-")|\(scopes)"
                        .utf8)
            }
        }
    }
}
