import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTestSupport
import RaveTransport
import Synchronization
import Testing

@testable import Identity

@Suite("Identity over mTLS")
struct IdentityRuntimeTests {
    /// The identity process as `make run` starts it, driven over mTLS as the gateway drives it.
    ///
    /// Runtime, migrations, handlers and merge delivery, called with the gateway's certificate: guest login, then
    /// a refresh. The client certificate of the same CA reaches neither the public nor the internal methods.
    @Test func guestLoginAndRefreshThroughTheServiceRuntime() async throws {
        try await Self.withRuntime { runtime, _, connect in
            let applications = ApplicationStore(database: runtime.context.pool)
            let publisher = try await applications.createPublisher(name: "Publisher")
            let app = try await applications.createApplication(
                publisherID: try #require(RaveID(publisher.publisherId)), name: "Game",
                settings: .init(crossAppLogin: true))

            let connection = try connect("gateway")
            let client = IdentityV1.IdentityClient(caller: connection)
            do {
                let login = try await client.guestLogin(
                    .init(appId: app.id.hex, device: .init(deviceId: "runtime-device", platform: "android")),
                    options: CallOptions(timeout: .seconds(10)))
                #expect(login.created)
                let tokens = try #require(login.sessionTokens)
                #expect(try accessTokenSubject(tokens.accessToken) == login.userID)
                let refreshed = try await client.refreshSession(
                    .init(refreshToken: tokens.refreshToken), options: CallOptions(timeout: .seconds(10)))
                #expect(refreshed.tokens?.sessionId == tokens.sessionId)
                #expect(refreshed.tokens?.refreshToken != tokens.refreshToken)
                // The retired token now revokes the session, over the wire as in-process.
                await #expect(throws: RPCError.self) {
                    _ = try await client.refreshSession(.init(refreshToken: tokens.refreshToken))
                }
            } catch {
                Issue.record("call failed: \(error)")
            }
            let stranger = try connect("client")
            let strangerLogin = await statusCode {
                _ = try await IdentityV1.IdentityClient(caller: stranger).guestLogin(
                    .init(appId: app.id.hex, device: .init(deviceId: "stranger", platform: "android")))
            }
            #expect(strangerLogin?.code == .permissionDenied)
            let strangerLookup = await statusCode {
                _ = try await IdentityV1.IdentityInternalClient(caller: stranger).signingKeys(.init())
            }
            #expect(strangerLookup?.code == .permissionDenied)
            stranger.close()
            connection.close()
        }
    }

    /// Identity as `make run` starts it (`IdentityMain.services` in a `ServiceRuntime`, on a fresh database, with
    /// development certificates), plus `environment`; `body` gets the runtime, the `IdentityDependencies` it built, and a
    /// connector by certificate name ("gateway", "client").
    static func withRuntime(
        environment extra: [String: String] = [:],
        _ body: (ServiceRuntime, IdentityDependencies, (_ certificate: String) throws -> RPCClient) async throws -> Void
    ) async throws {
        let certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-identity-\(UUID())").path
        try DevelopmentCertificates.write(to: certificates, services: ["identity", "gateway", "client"])
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        try await IdentityHarness.withDatabase { url in
            let environment = [
                "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
                "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "2s",
                "RAVE_DATABASE_URL": url, "RAVE_DB_POOL_SIZE": "4",
                "RAVE_SECRET_KEY_FILE": try SecretKeyFile.write(in: certificates),
            ].merging(extra) { _, new in new }
            let built = Mutex<IdentityDependencies?>(nil)
            let runtime = try await ServiceRuntime.start(
                name: "identity", environment: environment,
                migrations: .directory(IdentityHarness.migrationsDirectory)
            ) { context in
                let services = try await IdentityMain.services(context: context)
                built.withLock { $0 = (services.first as? PlayerHandlers)?.dependencies }
                return services
            }
            let running = Task { try await runtime.run() }
            let clientGroup = try EventLoopGroup(loopCount: 1)
            func connect(as name: String) throws -> RPCClient {
                let tls = try TLSContext(
                    .client(
                        trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/\(name).pem",
                        privateKeyPath: "\(certificates)/\(name)-key.pem"))
                return RPCClient(host: "127.0.0.1", port: runtime.rpcPort, tls: tls, group: clientGroup)
            }
            var failure: (any Error)?
            do {
                try await body(runtime, try #require(built.withLock { $0 }), connect)
            } catch {
                failure = error
            }
            runtime.triggerShutdown()
            try await running.value
            clientGroup.shutdown()
            if let failure { throw failure }
        }
    }
}
