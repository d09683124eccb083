import Foundation
import RaveAuth
import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// Authentication and access rules, end to end over TLS: client → gateway → service.
@Suite("Gateway authentication")
struct GatewayAuthTests {
    static let whoami = EchoV1.EchoRequest(payload: Array("whoami".utf8)).protobufBytes()

    @Test func validTokenReachesTheServiceAsTheCallerWithoutTheToken() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let token = try harness.token(for: "user-1", scopes: ["player"])
        let response = try await connection.call(
            method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: bearer(token))
        let seen = String(decoding: try EchoV1.EchoResponse(protobufBytes: response).payload, as: UTF8.self)
        // user | app | session | scopes | client address | authorization (never forwarded)
        #expect(seen == "user-1|app-1|session-user-1|player|127.0.0.1|-")
        connection.close()
        try await harness.stop()
    }

    @Test func verifiedTokensAreCachedAndMergedUsersActAsTheTarget() async throws {
        let harness = try await GatewayHarness.start()
        harness.identity.merges.withLock { $0["old-user"] = "new-user" }
        let connection = try await harness.connect()
        let token = try harness.token(for: "old-user")
        for _ in 0..<3 {
            let response = try await connection.call(
                method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: bearer(token))
            let seen = String(decoding: try EchoV1.EchoResponse(protobufBytes: response).payload, as: UTF8.self)
            #expect(seen.hasPrefix("new-user|app-1|"))
        }
        // One resolution for three calls: the merge answer is cached.
        #expect(harness.identity.resolveCalls.load(ordering: .relaxed) == 1)
        connection.close()
        try await harness.stop()
    }

    /// A merge on identity's feed evicts the cached resolution at once: the cache's lifetime (30 s by default)
    /// no longer decides when an old token acts as the target.
    @Test func aMergeOnTheFeedEvictsTheCachedResolution() async throws {
        let harness = try await GatewayHarness.start(["RAVE_GATEWAY_REVOCATION_POLL": "50ms"])
        let connection = try await harness.connect()
        let token = try harness.token(for: "guest-b")
        func seen() async throws -> String {
            let response = try await connection.call(
                method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: bearer(token))
            return String(decoding: try EchoV1.EchoResponse(protobufBytes: response).payload, as: UTF8.self)
        }
        #expect(try await seen().hasPrefix("guest-b|"))
        // Resolved and cached as itself; resolving again would now say "bob", but the cache still answers.
        harness.identity.merges.withLock { $0["guest-b"] = "bob" }
        #expect(try await seen().hasPrefix("guest-b|"))
        // Identity announces the merge: within a poll the token acts as the target.
        harness.identity.merge("guest-b", into: "bob")
        try await within(.seconds(1), "the merged user's token acts as the target") {
            try await seen().hasPrefix("bob|")
        }
        // A user merged into bob earlier (cached as bob) follows bob to the end of the chain when bob moves on:
        // identity repoints the chain in the merge's transaction and announces only bob.
        let earlier = try harness.token(for: "guest-a")
        func seenEarlier() async throws -> String {
            let response = try await connection.call(
                method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: bearer(earlier))
            return String(decoding: try EchoV1.EchoResponse(protobufBytes: response).payload, as: UTF8.self)
        }
        harness.identity.merges.withLock { $0["guest-a"] = "bob" }
        #expect(try await seenEarlier().hasPrefix("bob|"))
        harness.identity.merges.withLock { $0["guest-a"] = "carol" }
        harness.identity.merge("bob", into: "carol")
        try await within(.seconds(1), "a chain resolves to its end") { try await seenEarlier().hasPrefix("carol|") }
        connection.close()
        try await harness.stop()
    }

    @Test func badTokensAreUnauthenticated() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let valid = try harness.token(for: "user-1")
        let expired = try harness.token(for: "user-1", lifetime: 60, now: Date().addingTimeInterval(-3600))
        let forgedSigner = AccessTokenSigner(keyID: "test-key-1", privateKey: try Ed25519PrivateKey())
        let forged = try forgedSigner.issue(subject: "user-1", applicationID: "app-1", sessionID: "s", scopes: []).token
        let parts = valid.split(separator: ".")
        let tampered = parts[0] + "." + Base64URL.encode(Array("{\"sub\":\"admin\"}".utf8)) + "." + parts[2]
        let cases: [(String, String)] = [
            ("Bearer " + expired, "expired"), ("Bearer " + forged, "signature"), ("Bearer " + tampered, "invalid"),
            ("Bearer not-a-token", "invalid"), ("Basic dXNlcjpwYXNz", "Bearer"), ("Bearer", "Bearer"),
        ]
        for (authorization, fragment) in cases {
            let error = await failure(
                connection, "rave.echo.v1.Echo/Echo", Self.whoami,
                options: CallOptions(metadata: [MetadataKey.authorization: authorization]))
            #expect(error?.code == .unauthenticated, "\(authorization)")
            #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "")")
        }
        let missing = await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami)
        #expect(missing?.code == .unauthenticated)
        let deleted = await failure(
            connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: bearer(try harness.token(for: "deleted")))
        #expect(deleted?.code == .unauthenticated)
        connection.close()
        try await harness.stop()
    }

    /// A client asserting who calls is refused outright, whatever its certificate: only the gateway says who
    /// calls, and silently dropping the claim would hide the attempt.
    @Test(arguments: [nil, "client", "admin"])
    func callerMetadataFromAClientIsRefused(certificate: String?) async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect(certificate: certificate)
        for (key, value) in [
            (MetadataKey.callerUserID, "someone-else"), (MetadataKey.callerScopes, "admin service"),
            (MetadataKey.clientAddress, "10.9.9.9"), (MetadataKey.callerAdmin, "root"),
        ] {
            var options = bearer(try harness.token(for: "user-1"))
            options.metadata[key] = value
            let refused = await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: options)
            #expect(refused?.code == .permissionDenied, "\(key)")
        }
        let response = try await connection.call(
            method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: bearer(try harness.token(for: "user-1")))
        let seen = String(decoding: try EchoV1.EchoResponse(protobufBytes: response).payload, as: UTF8.self)
        #expect(seen.hasPrefix("user-1|app-1|session-user-1|"))
        connection.close()
        try await harness.stop()
    }

    @Test func tokensOfARotatedKeyAreAcceptedAfterOneRefresh() async throws {
        let harness = try await GatewayHarness.start()
        let newKey = try Ed25519PrivateKey()
        let newPublicKey = try newKey.publicKey()
        harness.identity.keys.withLock { $0.append(.init(keyID: "test-key-2", publicKey: newPublicKey)) }
        let before = harness.identity.signingKeyCalls.load(ordering: .relaxed)
        let token = try AccessTokenSigner(keyID: "test-key-2", privateKey: newKey).issue(
            subject: "user-2", applicationID: "app-1", sessionID: "s2", scopes: []
        ).token
        let connection = try await harness.connect()
        _ = try await connection.call(method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: bearer(token))
        #expect(harness.identity.signingKeyCalls.load(ordering: .relaxed) == before + 1)
        connection.close()
        try await harness.stop()
    }

    @Test func loginMethodsNeedNoToken() async throws {
        let harness = try await GatewayHarness.start(["RAVE_GATEWAY_IDENTITY_ADDRESSES": "127.0.0.1:1"])
        let connection = try await harness.connect()
        // No identity backend answers (port 1), so getting past authentication means UNAVAILABLE, not
        // UNAUTHENTICATED.
        for method in MethodRoute.loginMethods {
            let error = await failure(connection, method)
            #expect(error?.code == .unavailable, "\(method)")
            // A token that no longer verifies (an expired one sent with RefreshSession) does not block a login.
            let withStaleToken = await failure(connection, method, options: bearer("not-a-valid-token"))
            #expect(withStaleToken?.code == .unavailable, "\(method) with a stale token")
        }
        connection.close()
        try await harness.stop()
    }

    /// A player who lost the password has no session: recovery needs no token.
    ///
    /// Verifying an email or changing it acts on the signed-in account, so those need one.
    @Test func passwordRecoveryNeedsNoTokenAndEmailVerificationDoes() async throws {
        let open = ["RequestPasswordReset", "ResetPassword"].map { "rave.identity.v1.Identity/\($0)" }
        for method in open {
            #expect(try MethodRoute(method: method).access == .login, "\(method)")
        }
        for method in ["VerifyEmail", "ResendVerification", "ChangeEmail"].map({ "rave.identity.v1.Identity/\($0)" }) {
            #expect(try MethodRoute(method: method).access == .player, "\(method)")
        }
        #expect(try MethodRoute(method: "rave.identity.v1.IdentityAdmin/SetMailTemplate").access == .admin)
    }

    @Test func adminMethodsNeedTheAdminCertificate() async throws {
        let harness = try await GatewayHarness.start()
        let player = try await harness.connect()
        let token = try harness.token(for: "user-1", scopes: ["player", "admin"])
        let denied = await failure(player, "rave.wallet.v1.WalletAdmin/Deposit", [], options: bearer(token))
        #expect(denied?.code == .permissionDenied)
        let otherCertificate = try await harness.connect(certificate: "client")
        let alsoDenied = await failure(otherCertificate, "rave.wallet.v1.WalletAdmin/Deposit", [])
        #expect(alsoDenied?.code == .permissionDenied)
        // A player token claiming the admin scope is not an admin on player methods either.
        let response = try await player.call(
            method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: bearer(token))
        #expect(
            String(decoding: try EchoV1.EchoResponse(protobufBytes: response).payload, as: UTF8.self).contains(
                "|player|"))

        let admin = try await harness.connect(certificate: "admin")
        let adminView = try await admin.call(
            method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: bearer(try harness.token(for: "user-9")))
        #expect(
            String(decoding: try EchoV1.EchoResponse(protobufBytes: adminView).payload, as: UTF8.self)
                == "user-9|app-1|session-user-9|admin player|127.0.0.1|-")
        // The admin gets through to admin methods (no wallet runs here, so the gateway answers UNAVAILABLE).
        let routed = await failure(admin, "rave.wallet.v1.WalletAdmin/Deposit", [])
        #expect(routed?.code == .unavailable)
        for connection in [player, otherCertificate, admin] { connection.close() }
        try await harness.stop()
    }

    /// Services learn which admin credential acted (identity's audit log records it): the admin certificate's
    /// common name, on admin calls only.
    @Test func servicesSeeTheAdminCertificatesNameOnAdminCallsOnly() async throws {
        let harness = try await GatewayHarness.start()
        let whichAdmin = EchoV1.EchoRequest(payload: Array("whichadmin".utf8)).protobufBytes()
        func seen(_ connection: RPCConnection, _ options: CallOptions) async throws -> String {
            let response = try await connection.call(
                method: "rave.echo.v1.Echo/Echo", request: whichAdmin, options: options)
            return String(decoding: try EchoV1.EchoResponse(protobufBytes: response).payload, as: UTF8.self)
        }
        let admin = try await harness.connect(certificate: "admin")
        #expect(try await seen(admin, bearer(try harness.token(for: "user-9"))) == "admin")
        let player = try await harness.connect(certificate: "client")
        #expect(try await seen(player, bearer(try harness.token(for: "user-9", scopes: ["player", "admin"]))) == "-")
        for connection in [admin, player] { connection.close() }
        try await harness.stop()
    }

    @Test func internalMethodsAreNeverReachable() async throws {
        let harness = try await GatewayHarness.start()
        let admin = try await harness.connect(certificate: "admin")
        let token = try harness.token(for: "user-1")
        for method in [
            "rave.identity.v1.IdentityInternal/SigningKeys", "rave.identity.v1.IdentityInternal/ResolveUsers",
            "rave.merge.v1.MergeParticipant/MergeUsers", "rave.erasure.v1.ErasureParticipant/EraseUser",
            "rave.export.v1.ExportParticipant/ExportUser", "rave.events.v1.EventSink/DeliverEvents",
        ] {
            let error = await failure(admin, method, [], options: bearer(token))
            #expect(error?.code == .permissionDenied, "\(method)")
        }
        admin.close()
        try await harness.stop()
    }
}

/// Parsing the authorization value, which runs on every call.
@Suite("Gateway bearer tokens")
struct BearerTokenTests {
    @Test func theSchemeIsCaseInsensitiveAndSpacesAroundTheTokenAreIgnored() throws {
        #expect(try Authenticator.bearerToken("Bearer abc.def.ghi") == "abc.def.ghi")
        #expect(try Authenticator.bearerToken("bearer  abc ") == "abc")
        #expect(try Authenticator.bearerToken("BEARER\tabc") == "abc")
    }

    @Test(arguments: ["Basic abc", "Bearer", "Bearer a b", "", "Bearerx abc", "Bearér abc"])
    func malformedValuesAreUnauthenticated(value: String) {
        let error = #expect(throws: RPCError.self) { try Authenticator.bearerToken(value) }
        #expect(error?.code == .unauthenticated)
    }
}
