import Foundation
import RaveMessages
import RaveRuntime
import RaveTestSupport
import RaveTransport
import Testing

@testable import Gateway
@testable import Identity

/// The HTTP/JSON front door in front of the real identity service (its own PostgreSQL database, mTLS): a game's
/// first two calls, in JSON and in protobuf, and the curl examples of docs/gateway.md run as written.
@Suite("Gateway HTTP front door with identity", .timeLimit(.minutes(3)))
struct GatewayHTTPIdentityTests {
    /// Identity and a gateway in front of it, with an application to log in to.
    struct Stack {
        let identity: ServiceRuntime
        let gateway: GatewayRuntime
        let certificates: String
        let appID: String
        let clientGroup: EventLoopGroup

        var httpPort: Int { gateway.httpPort ?? 0 }

        func http() async throws -> HTTPTestConnection {
            try await HTTPTestConnection.connect(port: httpPort, certificates: certificates, group: clientGroup)
        }
    }

    static func repositoryPath(_ relative: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(relative).path
    }

    /// Starts identity on a fresh database and a gateway in front of it, runs `body`, and stops both.
    static func with(_ body: (Stack) async throws -> Void) async throws {
        let certificates = FileManager.default.temporaryDirectory.appendingPathComponent("rave-http-\(UUID())").path
        try DevelopmentCertificates.write(to: certificates, services: ["identity", "gateway", "admin"])
        defer { try? FileManager.default.removeItem(atPath: certificates) }
        try await ScratchDatabase.with(prefix: "rave_gateway_http_") { url in
            var configuration = IdentityConfiguration(secretKeys: try SecretKeyFile.ring())
            configuration.passwordParameters = .testing
            let fixed = configuration
            let identity = try await ServiceRuntime.start(
                name: "identity",
                environment: [
                    "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
                    "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "warning", "RAVE_SHUTDOWN_GRACE": "1s",
                    "RAVE_DATABASE_URL": url, "RAVE_DB_POOL_SIZE": "4",
                ], migrations: .directory(repositoryPath("Services/Identity/Migrations"))
            ) { context in
                try await IdentityDependencies.start(pool: context.pool, configuration: fixed).rpcServices
            }
            let identityRunning = Task { try await identity.run() }
            var failure: (any Error)?
            do {
                let applications = try await IdentityDependencies.start(
                    pool: identity.context.pool, configuration: fixed)
                let publisher = try await applications.createPublisher(name: "Publisher")
                let app = try await applications.createApplication(
                    publisherID: publisher, name: "Game", crossAppLogin: false)
                var environment = [
                    "RAVE_CERT_DIR": certificates, "RAVE_LISTEN": "127.0.0.1:0", "RAVE_ADMIN_LISTEN": "127.0.0.1:0",
                    "RAVE_GATEWAY_HTTP_LISTEN": "127.0.0.1:0", "RAVE_EVENT_LOOPS": "1", "RAVE_LOG_LEVEL": "error",
                    "RAVE_SHUTDOWN_GRACE": "1s", "RAVE_GATEWAY_HEALTH_INTERVAL": "200ms",
                    "RAVE_GATEWAY_IDENTITY_ADDRESSES": "127.0.0.1:\(identity.rpcPort)",
                ]
                for service in ["social", "leaderboards", "gifts", "push", "wallet"] {
                    environment["RAVE_GATEWAY_\(service.uppercased())_ADDRESSES"] = "127.0.0.1:1"
                }
                let gateway = try await GatewayRuntime.start(environment: environment)
                let gatewayRunning = Task { try await gateway.run() }
                await gateway.signingKeys.refresh()
                await gateway.revocations.poll()
                let clientGroup = try EventLoopGroup(loopCount: 1)
                do {
                    try await body(
                        Stack(
                            identity: identity, gateway: gateway, certificates: certificates, appID: app.hex,
                            clientGroup: clientGroup))
                } catch {
                    failure = error
                }
                gateway.triggerShutdown()
                try await gatewayRunning.value
                clientGroup.shutdown()
            } catch {
                failure = error
            }
            identity.triggerShutdown()
            try await identityRunning.value
            if let failure { throw failure }
        }
    }

    @Test func guestLoginThenGetCurrentUserInJSON() async throws {
        try await Self.with { stack in
            let connection = try await stack.http()
            defer { connection.close() }
            let login = try await connection.post(
                "/v1/rave.identity.v1.Identity/GuestLogin",
                json: #"{"appId": "\#(stack.appID)", "device": {"deviceId": "json-1"}}"#)
            #expect(login.status == 200, "\(login.text)")
            let tokens = try #require(login.json?["tokens"] as? [String: Any])
            let token = try #require(tokens["accessToken"] as? String)
            let loggedIn = try #require(
                ((login.json?["user"] as? [String: Any])?["profile"] as? [String: Any])?["userId"] as? String)

            let me = try await connection.post(
                "/v1/rave.identity.v1.Identity/GetCurrentUser", json: "{}",
                headers: ["Authorization": "Bearer \(token)"])
            #expect(me.status == 200, "\(me.text)")
            let profile = (me.json?["user"] as? [String: Any])?["profile"] as? [String: Any]
            #expect(profile?["userId"] as? String == loggedIn)

            let forged = try await connection.post(
                "/v1/rave.identity.v1.Identity/GetCurrentUser", json: "{}",
                headers: ["Authorization": "Bearer \(token.dropLast(4))AAAA"])
            #expect(forged.status == 401)
        }
    }

    @Test func guestLoginThenGetCurrentUserInProtobuf() async throws {
        try await Self.with { stack in
            let connection = try await stack.http()
            defer { connection.close() }
            var request = IdentityV1.GuestLoginRequest()
            request.appId = stack.appID
            request.device = IdentityV1.DeviceInfo(deviceId: "protobuf-1", name: "", platform: "")
            let login = try await connection.request(
                "POST", "/v1/rave.identity.v1.Identity/GuestLogin",
                headers: ["Content-Type": "application/x-protobuf"], body: request.protobufBytes())
            #expect(login.status == 200)
            #expect(login.header("Content-Type") == "application/x-protobuf")
            let response = try IdentityV1.LoginResponse(protobufBytes: login.body)
            guard case .tokens(let tokens) = response.outcome else {
                Issue.record("a guest login answers with tokens")
                return
            }
            let me = try await connection.request(
                "POST", "/v1/rave.identity.v1.Identity/GetCurrentUser",
                headers: ["Content-Type": "application/x-protobuf", "Authorization": "Bearer \(tokens.accessToken)"])
            #expect(me.status == 200)
            let user = try IdentityV1.GetCurrentUserResponse(protobufBytes: me.body).user
            let loggedIn = try #require(response.user?.profile?.userId)
            #expect(user?.profile?.userId == loggedIn)
        }
    }

    // MARK: - curl

    /// The commands of docs/gateway.md's "curl" block, continuation lines joined.
    static func documentedCurlCommands() throws -> [String] {
        let text = try String(contentsOfFile: repositoryPath("docs/gateway.md"), encoding: .utf8)
        guard let section = text.range(of: "### curl\n"),
            let start = text.range(of: "```sh\n", range: section.upperBound..<text.endIndex),
            let end = text.range(of: "```", range: start.upperBound..<text.endIndex)
        else { throw TestFailure("docs/gateway.md has no curl block") }
        return text[start.upperBound..<end.lowerBound].replacingOccurrences(of: "\\\n", with: " ")
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Runs `command` with bash in `directory` with `environment` added.
    static func run(
        _ command: String, in directory: String, environment: [String: String] = [:]
    ) async throws -> ExternalCommand.Outcome {
        try await ExternalCommand.run("/bin/bash", ["-c", command], in: directory, environment: environment)
    }

    @Test(.enabled(if: ExternalCommand.isInstalled("/usr/bin/curl")))
    func theDocumentedCurlExamplesWork() async throws {
        let commands = try Self.documentedCurlCommands()
        try #require(commands.count == 2)
        try await Self.with { stack in
            // The examples are written for `make run`: its port, its CA and its demo application's id file.
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rave-curl-\(UUID())").path
            try FileManager.default.createDirectory(
                atPath: directory + "/.run/certs", withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.copyItem(
                atPath: stack.certificates + "/ca.pem", toPath: directory + "/.run/certs/ca.pem")
            try Data(stack.appID.utf8).write(to: URL(fileURLWithPath: directory + "/.run/demo-app-id"))
            func adapted(_ command: String) -> String {
                command.replacingOccurrences(of: "127.0.0.1:8443", with: "127.0.0.1:\(stack.httpPort)")
                    + " --silent --show-error --write-out '\\n%{http_code} %{http_version}'"
            }

            let login = try await Self.run(adapted(commands[0]), in: directory)
            #expect(login.status == 0, "\(login.errors)")
            // curl prefers HTTP/2 over TLS, and the front door takes it.
            #expect(login.output.hasSuffix("\n200 2"), "\(login.output)")
            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(login.output.split(separator: "\n")[0].utf8))
                    as? [String: Any])
            let token = try #require((json["tokens"] as? [String: Any])?["accessToken"] as? String)

            let me = try await Self.run(adapted(commands[1]), in: directory, environment: ["TOKEN": token])
            #expect(me.status == 0, "\(me.errors)")
            #expect(me.output.hasSuffix("\n200 2"), "\(me.output)")
            #expect(me.output.contains("\"userId\""))

            // A client that offers only http/1.1 gets it: the same call over HTTP/1.1.
            let negotiated = try await Self.run(
                adapted(commands[1]) + " --http1.1 --verbose", in: directory, environment: ["TOKEN": token])
            #expect(negotiated.output.hasSuffix("\n200 1.1"), "\(negotiated.output)")
            #expect(negotiated.output.contains("\"userId\""))
            #expect(negotiated.errors.contains("ALPN: server accepted http/1.1"), "\(negotiated.errors)")
        }
    }
}
