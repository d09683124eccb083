import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices
import RaveTestSupport
import RaveTransport
import Testing

@testable import Identity

@Suite("Identity over mTLS")
struct IdentityRuntimeTests {
    /// The identity process as `make run` starts it (runtime, migrations, handlers, merge delivery), driven by a
    /// real RPC client with a client certificate: guest login, then a refresh.
    @Test func guestLoginAndRefreshThroughTheServiceRuntime() async throws {
        let certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-identity-\(UUID())").path
        try DevelopmentCertificates.write(to: certificates, services: ["identity", "client"])
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        try await IdentityHarness.withDatabase { url in
            let environment = [
                "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
                "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "2s",
                "RAVE_DATABASE_URL": url, "RAVE_DB_POOL_SIZE": "4",
                "RAVE_SECRET_KEY_FILE": try SecretKeyFile.write(in: certificates),
            ]
            let runtime = try await ServiceRuntime.start(
                name: "identity", environment: environment,
                migrations: .directory(IdentityHarness.migrationsDirectory)
            ) { context in
                try await IdentityMain.services(context: context)
            }
            let running = Task { try await runtime.run() }
            let applications = ApplicationStore(database: runtime.context.pool)
            let publisher = try await applications.createPublisher(name: "Publisher")
            let app = try await applications.createApplication(
                publisherID: try #require(RaveID(publisher.publisherId)), name: "Game",
                settings: .init(crossAppLogin: true))

            let clientGroup = try EventLoopGroup(loopCount: 1)
            let tls = try TLSContext(
                .client(
                    trustRootsPath: "\(certificates)/ca.pem", certificateChainPath: "\(certificates)/client.pem",
                    privateKeyPath: "\(certificates)/client-key.pem"))
            let connection = RPCClient(host: "127.0.0.1", port: runtime.rpcPort, tls: tls, group: clientGroup)
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
            connection.close()
            runtime.triggerShutdown()
            try await running.value
            clientGroup.shutdown()
        }
    }
}
