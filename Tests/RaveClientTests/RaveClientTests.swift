import Foundation
import RaveClient
import RaveMessages
import RaveRPC
import RaveServices
import RaveTransport
import Synchronization
import Testing

/// A gateway stand-in over real TLS: identity's login and refresh methods, an Echo answering with the
/// authorization it received, and Batch answering each call with the same.
final class StandInGateway: RPCService, Sendable {
    static let serviceName = "rave.identity.v1.Identity"
    /// Seconds until the login's access token expires (the refresh's lasts an hour).
    let loginLifetime: Int64
    let refreshCalls = Atomic<Int>(0)

    init(loginLifetime: Int64) {
        self.loginLifetime = loginLifetime
    }

    static func tokens(_ access: String, lifetime: Int64, refresh: String) -> IdentityV1.SessionTokens {
        var tokens = IdentityV1.SessionTokens()
        tokens.accessToken = access
        tokens.accessTokenExpiresAtUnixMs = Int64(Date().timeIntervalSince1970 * 1000) + lifetime * 1000
        tokens.refreshToken = refresh
        return tokens
    }

    var methods: [RPCMethod] {
        [
            RPCMethod(name: "rave.identity.v1.Identity/GuestLogin") { request, _ in
                let device = try IdentityV1.GuestLoginRequest(protobufBytes: request).device?.deviceId ?? ""
                var response = IdentityV1.LoginResponse()
                response.outcome = .tokens(
                    Self.tokens("login-\(device)", lifetime: self.loginLifetime, refresh: "refresh-0"))
                return response.protobufBytes()
            },
            RPCMethod(name: "rave.identity.v1.Identity/RefreshSession") { request, _ in
                let old = try IdentityV1.RefreshSessionRequest(protobufBytes: request).refreshToken
                let count = self.refreshCalls.wrappingAdd(1, ordering: .relaxed).newValue
                // Refresh tokens rotate: only the current one is accepted.
                guard old == "refresh-\(count - 1)" else { throw RPCError.unauthenticated("refresh token reused") }
                return IdentityV1.RefreshSessionResponse(
                    tokens: Self.tokens("refreshed-\(count)", lifetime: 3600, refresh: "refresh-\(count)")
                ).protobufBytes()
            },
            RPCMethod(name: "rave.echo.v1.Echo/Echo") { _, context in
                EchoV1.EchoResponse(payload: Array((context.metadata["authorization"] ?? "-").utf8)).protobufBytes()
            },
            RPCMethod(name: "rave.gateway.v1.Gateway/Batch") { request, context in
                var response = GatewayV1.BatchResponse()
                response.results = try GatewayV1.BatchRequest(protobufBytes: request).calls.map { call in
                    var result = GatewayV1.BatchResult()
                    result.name = call.name
                    result.response = Array((context.metadata["authorization"] ?? "-").utf8)
                    return result
                }
                return response.protobufBytes()
            },
        ]
    }
}

@Suite("Rave client library")
struct RaveClientTests {
    /// Runs `body` with a client of a stand-in gateway on loopback.
    static func withClient(
        loginLifetime: Int64 = 3600, _ body: (RaveClient, StandInGateway) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-client-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try DevelopmentCertificates.write(to: directory, services: ["gateway"])
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let gateway = StandInGateway(loginLifetime: loginLifetime)
        let server = RPCServer(
            services: [gateway], access: .open,
            tls: try TLSContext(
                .server(
                    certificateChainPath: "\(directory)/gateway.pem", privateKeyPath: "\(directory)/gateway-key.pem")),
            group: group)
        try server.start()
        let client = RaveClient(
            host: "127.0.0.1", port: server.localPort,
            tls: try TLSContext(.client(trustRootsPath: "\(directory)/ca.pem")), group: group)
        do {
            try await body(client, gateway)
        } catch {
            client.close()
            await server.shutdown()
            throw error
        }
        client.close()
        await server.shutdown()
    }

    static func echoedAuthorization(_ client: RaveClient) async throws -> String {
        let response = try await EchoV1.EchoClient(caller: client).echo(EchoV1.EchoRequest(payload: []))
        return String(decoding: response.payload, as: UTF8.self)
    }

    @Test func callsCarryTheSessionsAccessTokenOnlyAfterLogin() async throws {
        try await Self.withClient { client, _ in
            #expect(try await Self.echoedAuthorization(client) == "-")
            try await client.loginAsGuest(appID: "app-1", deviceID: "device-7")
            #expect(client.tokens?.accessToken == "login-device-7")
            #expect(try await Self.echoedAuthorization(client) == "Bearer login-device-7")
            client.forgetSession()
            #expect(try await Self.echoedAuthorization(client) == "-")
        }
    }

    @Test func aTokenAboutToExpireIsRefreshedOnceForConcurrentCalls() async throws {
        // The login's token expires within the refresh margin, so the next calls must refresh it first.
        try await Self.withClient(loginLifetime: 10) { client, gateway in
            try await client.loginAsGuest(appID: "app-1", deviceID: "device-1")
            let seen = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await Self.echoedAuthorization(client) } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(seen == ["Bearer refreshed-1"])
            #expect(gateway.refreshCalls.load(ordering: .relaxed) == 1)
            #expect(client.tokens?.refreshToken == "refresh-1")
        }
    }

    @Test func batchesCarryTheTokenAndReturnResultsInOrder() async throws {
        try await Self.withClient { client, _ in
            try await client.loginAsGuest(appID: "app-1", deviceID: "device-2")
            let calls = ["a", "b", "c"].map { name in
                var call = GatewayV1.BatchCall()
                call.name = name
                call.method = "rave.echo.v1.Echo/Echo"
                return call
            }
            let results = try await client.batch(calls)
            #expect(results.map(\.name) == ["a", "b", "c"])
            #expect(results.allSatisfy { String(decoding: $0.response, as: UTF8.self) == "Bearer login-device-2" })
        }
    }
}
