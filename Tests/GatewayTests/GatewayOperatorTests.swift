import Foundation
import RaveAuth
import RaveMessages
import RaveRPC
import RaveTransport
import Testing

@testable import Gateway
@testable import Identity

/// Operator accounts through the gateway, on real mTLS in front of the real identity service: each role against a
/// read and a write admin method, player and operator tokens kept to their own methods, a disabled operator refused
/// within the revocation poll, reasons required and writes recorded, on the binary port and the HTTP front door.
@Suite("Gateway operators", .timeLimit(.minutes(3)))
struct GatewayOperatorTests {
    typealias Stack = GatewayHTTPIdentityTests.Stack
    static let password = "a long operator password"

    /// A connection to the gateway's binary port, presenting the `certificate` client certificate when given.
    static func connect(_ stack: Stack, certificate: String? = nil) async throws -> RPCConnection {
        let tls = try TLSContext(
            .client(
                trustRootsPath: "\(stack.certificates)/ca.pem",
                certificateChainPath: certificate.map { "\(stack.certificates)/\($0).pem" },
                privateKeyPath: certificate.map { "\(stack.certificates)/\($0)-key.pem" }))
        return try await RPCConnection.connect(
            host: "127.0.0.1", port: stack.gateway.rpcPort, tls: tls, group: stack.clientGroup)
    }

    /// Options with an operator's (or player's) bearer token and, for writes, a reason.
    static func options(_ token: String, reason: String? = nil) -> CallOptions {
        var metadata = [MetadataKey.authorization: "Bearer \(token)"]
        if let reason { metadata[MetadataKey.reason] = reason }
        return CallOptions(timeout: .seconds(5), metadata: metadata, maxRetries: 0)
    }

    /// Calls `method` and returns the error, or nil when it succeeded.
    static func identityFailure(
        _ connection: RPCConnection, _ service: String, _ method: String, _ request: [UInt8], options: CallOptions
    ) async -> RPCError? {
        do {
            _ = try await connection.call(
                method: "rave.identity.v1.\(service)/\(method)", request: request, options: options)
            return nil
        } catch {
            return error
        }
    }

    /// Creates an operator with the admin certificate, enrols and logs it in through the gateway; returns its tokens.
    static func operatorTokens(
        _ stack: Stack, admin: RPCConnection, email: String, role: IdentityV1.OperatorRole, publisherID: String
    ) async throws -> IdentityV1.OperatorSessionTokens {
        let admins = IdentityV1.IdentityAdminClient(caller: admin)
        let created = try await admins.createOperator(
            .init(
                email: email, role: role, publisherId: role == .owner ? "" : publisherID, allPublishers: role == .owner,
                reason: "test operator"))
        let anonymous = try await connect(stack)
        defer { anonymous.close() }
        let players = IdentityV1.IdentityClient(caller: anonymous)
        let enrolled = try await players.operatorEnroll(
            .init(enrolmentCode: created.enrolmentCode, password: password))
        let totp = try #require(TOTP(base32Secret: enrolled.totpSecret))
        return try await players.operatorLogin(
            .init(email: email, password: password, totpCode: try totp.code(at: Date())))
    }

    /// The stack's application's publisher and a player of it.
    static func fixture(_ stack: Stack, admin: RPCConnection) async throws -> (publisherID: String, userID: String) {
        let application = try await IdentityV1.IdentityAdminClient(caller: admin).getApplication(
            .init(appId: stack.appID)
        ).application
        let anonymous = try await connect(stack)
        defer { anonymous.close() }
        let login = try await IdentityV1.IdentityClient(caller: anonymous).guestLogin(
            .init(appId: stack.appID, device: .init(deviceId: "operator-fixture")))
        return (application?.publisherId ?? "", login.user?.profile?.userId ?? "")
    }

    @Test func eachRoleReadsAndOnlyRolesAboveViewerWrite() async throws {
        try await GatewayHTTPIdentityTests.with { stack in
            let admin = try await Self.connect(stack, certificate: "admin")
            let operators = try await Self.connect(stack)
            defer {
                admin.close()
                operators.close()
            }
            let (publisher, user) = try await Self.fixture(stack, admin: admin)
            let roles: [IdentityV1.OperatorRole] = [.viewer, .support, .operator, .owner]
            for role in roles {
                let tokens = try await Self.operatorTokens(
                    stack, admin: admin, email: "\(role)@example.com", role: role, publisherID: publisher)
                let read = await Self.identityFailure(
                    operators, "IdentityAdmin", "GetApplication",
                    IdentityV1.GetApplicationRequest(appId: stack.appID).protobufBytes(),
                    options: Self.options(tokens.accessToken))
                #expect(read == nil, "\(role) reads: \(read?.message ?? "")")
                let write = await Self.identityFailure(
                    operators, "IdentityAdmin", "UnbanUser",
                    IdentityV1.UnbanUserRequest(userId: user, reason: "appeal upheld").protobufBytes(),
                    options: Self.options(tokens.accessToken))
                if role == .viewer {
                    #expect(write?.code == .permissionDenied)
                    #expect(write?.message.contains("needs the operator role support or higher") == true)
                } else {
                    #expect(write == nil, "\(role) writes: \(write?.message ?? "")")
                }
            }
            // The self-recorded writes name the operators who made them.
            let events = try await IdentityV1.IdentityAdminClient(caller: admin).listAuditEvents(
                .init(action: .unbanUser, actorKind: .operator)
            ).events
            #expect(Set(events.map(\.actor)) == ["support@example.com", "operator@example.com", "owner@example.com"])
        }
    }

    @Test func playerTokensNeverReachAdminMethodsNorOperatorTokensPlayerMethods() async throws {
        try await GatewayHTTPIdentityTests.with { stack in
            let admin = try await Self.connect(stack, certificate: "admin")
            let client = try await Self.connect(stack)
            defer {
                admin.close()
                client.close()
            }
            let (publisher, _) = try await Self.fixture(stack, admin: admin)
            let player = try await IdentityV1.IdentityClient(caller: client).guestLogin(
                .init(appId: stack.appID, device: .init(deviceId: "player-1")))
            guard case .tokens(let playerTokens) = player.outcome else {
                Issue.record("a guest login returns tokens")
                return
            }
            let playerToken = playerTokens.accessToken
            let onAdmin = await Self.identityFailure(
                client, "IdentityAdmin", "GetApplication",
                IdentityV1.GetApplicationRequest(appId: stack.appID).protobufBytes(),
                options: Self.options(playerToken))
            #expect(onAdmin?.code == .permissionDenied)
            #expect(onAdmin?.message.contains("a player's access token is not one") == true)

            let tokens = try await Self.operatorTokens(
                stack, admin: admin, email: "owner@example.com", role: .owner, publisherID: publisher)
            let onPlayer = await Self.identityFailure(
                client, "Identity", "GetCurrentUser", IdentityV1.GetCurrentUserRequest().protobufBytes(),
                options: Self.options(tokens.accessToken))
            #expect(onPlayer?.code == .permissionDenied)
            #expect(onPlayer?.message.contains("reaches only admin methods") == true)
        }
    }

    @Test func aDisabledOperatorIsRefusedWithinTheRevocationPoll() async throws {
        try await GatewayHTTPIdentityTests.with { stack in
            let admin = try await Self.connect(stack, certificate: "admin")
            let client = try await Self.connect(stack)
            defer {
                admin.close()
                client.close()
            }
            let (publisher, _) = try await Self.fixture(stack, admin: admin)
            let tokens = try await Self.operatorTokens(
                stack, admin: admin, email: "viewer@example.com", role: .viewer, publisherID: publisher)
            let read = IdentityV1.GetApplicationRequest(appId: stack.appID).protobufBytes()
            #expect(
                await Self.identityFailure(
                    client, "IdentityAdmin", "GetApplication", read, options: Self.options(tokens.accessToken)) == nil)
            _ = try await IdentityV1.IdentityAdminClient(caller: admin).disableOperator(
                .init(operatorId: tokens.account?.operatorId ?? "", reason: "left"))
            // Identity refuses the disabled account at once (PERMISSION_DENIED); within a poll of the revocation
            // feed the gateway refuses the session's token itself, before any service is called.
            let started = ContinuousClock.now
            var refused: RPCError?
            while ContinuousClock.now - started < .seconds(1), refused?.code != .unauthenticated {
                refused = await Self.identityFailure(
                    client, "IdentityAdmin", "GetApplication", read, options: Self.options(tokens.accessToken))
                #expect(refused != nil, "a disabled operator's call was served")
                if refused?.code != .unauthenticated { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(refused?.code == .unauthenticated)
            #expect(refused?.message == "the operator session has ended; log in again")
        }
    }

    /// A write the gateway records: refused without a reason, refused to a viewer, and with a reason recorded
    /// before it is forwarded, with the outcome after; through the HTTP front door with an operator bearer token.
    @Test func frontDoorAdminCallsWithAnOperatorTokenAreRecordedWithTheirReason() async throws {
        try await GatewayHTTPIdentityTests.with { stack in
            let admin = try await Self.connect(stack, certificate: "admin")
            defer { admin.close() }
            let (publisher, _) = try await Self.fixture(stack, admin: admin)
            let operatorTokens = try await Self.operatorTokens(
                stack, admin: admin, email: "content@example.com", role: .operator, publisherID: publisher)
            let viewer = try await Self.operatorTokens(
                stack, admin: admin, email: "viewer@example.com", role: .viewer, publisherID: publisher)
            let http = try await stack.http()
            defer { http.close() }
            let path = "/v1/rave.identity.v1.IdentityAdmin/SetMailTemplate"
            let body =
                #"{"appId": "\#(stack.appID)", "kind": "MAIL_KIND_VERIFY_EMAIL", "language": "en", "#
                + #""subject": "Your code", "body": "Code: {{code}}"}"#
            let read = try await http.post(
                "/v1/rave.identity.v1.IdentityAdmin/GetApplication", json: #"{"appId": "\#(stack.appID)"}"#,
                headers: ["Authorization": "Bearer \(viewer.accessToken)"])
            #expect(read.status == 200, "\(read.text)")
            let byViewer = try await http.post(
                path, json: body, headers: ["Authorization": "Bearer \(viewer.accessToken)", "X-Rave-Reason": "x"])
            #expect(byViewer.status == 403)
            let unexplained = try await http.post(
                path, json: body, headers: ["Authorization": "Bearer \(operatorTokens.accessToken)"])
            #expect(unexplained.status == 400)
            #expect((unexplained.json?["message"] as? String)?.contains("rave-reason") == true)
            let written = try await http.post(
                path, json: body,
                headers: [
                    "Authorization": "Bearer \(operatorTokens.accessToken)", "X-Rave-Reason": "new wording",
                ])
            #expect(written.status == 200, "\(written.text)")

            let events = try await IdentityV1.IdentityAdminClient(caller: admin).listAuditEvents(
                .init(operatorId: operatorTokens.account?.operatorId ?? "")
            ).events
            #expect(events.count == 1)
            let event = try #require(events.first)
            #expect(event.action == .adminCall)
            #expect(event.method == "rave.identity.v1.IdentityAdmin/SetMailTemplate")
            #expect(event.actor == "content@example.com")
            #expect(event.reason == "new wording")
            #expect(event.requestJson.contains(#""subject": "Your code""#))
            #expect(event.finished && event.statusCode == 0)

            // The admin certificate's writes are recorded too, under its name, without a reason required.
            _ = try await IdentityV1.IdentityAdminClient(caller: admin).setMailTemplate(
                .init(appId: stack.appID, kind: .verifyEmail, language: "de", subject: "Code", body: "{{code}}"))
            let byCertificate = try await IdentityV1.IdentityAdminClient(caller: admin).listAuditEvents(
                .init(actorKind: .adminCertificate, method: "rave.identity.v1.IdentityAdmin/SetMailTemplate")
            ).events
            #expect(byCertificate.map(\.reason) == ["no reason given"])
        }
    }

    /// Secrets never reach the audit log: fields whose names say password, secret, token or key are redacted at any
    /// depth.
    @Test func recordedRequestsHaveTheirSecretsRedacted() throws {
        let redacted = try #require(
            AdminAudit.redacted(["password": "hunter2", "name": "x", "nested": [["apiToken": "t", "keep": 1]]])
                as? [String: Any])
        #expect(redacted["password"] as? String == "[redacted]")
        #expect(redacted["name"] as? String == "x")
        let nested = try #require((redacted["nested"] as? [Any])?.first as? [String: Any])
        #expect(nested["apiToken"] as? String == "[redacted]")
        #expect(nested["keep"] as? Int == 1)
    }

    /// Fail closed: when identity cannot record an admin write, the gateway refuses it and the service never sees it.
    @Test func anAdminWriteTheAuditLogCannotRecordIsNotForwarded() async throws {
        let harness = try await GatewayHarness.start()
        let admin = try await harness.connect(certificate: "admin")
        harness.identity.auditDown.store(true, ordering: .relaxed)
        let refused = await failure(admin, "rave.wallet.v1.WalletAdmin/Deposit", [])
        #expect(refused?.code == .unavailable)
        #expect(refused?.message.hasPrefix("the audit log could not record this write, so it was not made") == true)
        #expect(refused?.notProcessed == true)
        harness.identity.auditDown.store(false, ordering: .relaxed)
        // Recorded now; the call goes on (no wallet runs here, so the gateway answers UNAVAILABLE for it).
        let routed = await failure(admin, "rave.wallet.v1.WalletAdmin/Deposit", [])
        #expect(routed?.message.contains("audit log") == false)
        let entries = harness.identity.auditEntries.withLock { $0 }
        #expect(entries.map(\.method) == ["rave.wallet.v1.WalletAdmin/Deposit"])
        #expect(entries.first?.actorKind == .adminCertificate)
        #expect(harness.identity.auditOutcomes.withLock { $0["1"] } == 14)
        admin.close()
        try await harness.stop()
    }
}
