import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// The loop paths' resolved tokens (`Authenticator.loopCaller`): one lookup per warm call, the forwarded caller
/// computed once, and still every per-call rule: a revoked session, an expired token and an announced merge are
/// seen at once.
@Suite("Gateway loop callers")
struct LoopCallerTests {
    static let whoami = EchoV1.EchoRequest(payload: Array("whoami".utf8)).protobufBytes()

    /// The metadata forwarded with a `LoopCaller`'s precomputed entries is byte for byte what the general
    /// encoding of the admitted caller gives, for a token whose scopes the gateway strips or keeps, and stays so
    /// when the client's entries or host change between calls (the last result is reused only for the same).
    @Test func forwardedBytesEqualTheGeneralEncoding() async throws {
        let harness = try await GatewayHarness.start()
        let pipeline = harness.runtime.pipeline
        func context(_ metadata: [String: String], address: String) -> RequestContext {
            RequestContext(
                requestID: "r", method: "rave.echo.v1.Echo/Echo", deadline: .max, metadata: metadata,
                peer: PeerIdentity(address: address, certificateCommonName: nil), caller: nil,
                logger: harness.runtime.logger, encodedMetadata: EncodedMetadata(metadata))
        }
        for scopes in [["player"], ["player", "guest"], ["player", "admin", "service", "authenticated"]] {
            let authorization = "Bearer \(try harness.token(for: "user-1", scopes: scopes))"
            _ = try await pipeline.authenticator.caller(authorization: authorization)
            let player = try #require(pipeline.authenticator.loopCaller(authorization: authorization))
            let admitted = try CallAdmission<BackendPool>.credential(
                method: "rave.echo.v1.Echo/Echo", route: try MethodRoute(method: "rave.echo.v1.Echo/Echo"),
                role: nil, token: .verified(player.caller), reason: nil
            ).get().caller
            let metadata = [MetadataKey.authorization: authorization, MetadataKey.traceID: "trace-1", "x-app": "7"]
            var calls = [context(metadata, address: "[::1]:4242"), context(metadata, address: "[::1]:4242")]
            calls.append(context(metadata.merging([MetadataKey.traceID: "trace-2"]) { $1 }, address: "[::1]:4242"))
            calls.append(context(metadata.merging([MetadataKey.traceID: "trace-2"]) { $1 }, address: "10.0.0.9:1"))
            calls.append(context([MetadataKey.authorization: authorization], address: "10.0.0.9:1"))
            calls.append(context(metadata, address: "[::1]:4242"))
            var seen: [EncodedMetadata] = []
            for call in calls {
                let general = pipeline.forwardedMetadata(call, caller: admitted)
                let loop = pipeline.forwardedMetadata(
                    call, player: player, host: CallPipeline.host(of: call.peer.address))
                #expect(loop == general, "\(scopes), \(call.peer.address), \(call.metadata)")
                seen.append(loop)
            }
            #expect(seen[0] == seen[1] && seen[0] == seen[5])
            #expect(Set(seen[1...4]).count == 4)
            let forwarded = seen[0].dictionary
            #expect(forwarded[MetadataKey.authorization] == nil)
            #expect(forwarded[MetadataKey.callerUserID] == "user-1")
            #expect(
                forwarded[MetadataKey.callerScopes]
                    == scopes.filter { $0 != "admin" && $0 != "service" }.sorted()
                    .joined(separator: " "))
            #expect(forwarded[CallPipeline.clientAddressKey] == "::1")
            #expect(forwarded[MetadataKey.traceID] == "trace-1" && forwarded["x-app"] == "7")
        }
        try await harness.stop()
    }

    /// A session revoked after its token was resolved for the loop path is refused there within a poll: the
    /// cached entry is checked against the deny-set on every call.
    @Test func aRevokedSessionIsNotServedFromTheLoopCache() async throws {
        let harness = try await GatewayHarness.start(["RAVE_GATEWAY_REVOCATION_POLL": "50ms"])
        let authenticator = harness.runtime.pipeline.authenticator
        let authorization = "Bearer \(try harness.token(for: "user-1"))"
        _ = try await authenticator.caller(authorization: authorization)
        #expect(authenticator.loopCaller(authorization: authorization) != nil)
        // Served from the entry now (the token's cache is not asked again).
        #expect(authenticator.loopCaller(authorization: authorization) != nil)
        harness.identity.revoke("session-user-1")
        try await within(.seconds(1), "the loop cache refuses the revoked session") {
            authenticator.loopCaller(authorization: authorization) == nil
        }
        await #expect(throws: RPCError.self) { try await authenticator.caller(authorization: authorization) }
        try await harness.stop()
    }

    /// The cached entry answers expiry as the verifier does, at every second around the end.
    @Test func theLoopCacheAppliesTheExpiryRule() async throws {
        let harness = try await GatewayHarness.start()
        let authenticator = harness.runtime.pipeline.authenticator
        let issuedAt = Date()
        let authorization = "Bearer \(try harness.token(for: "user-1", lifetime: 60, now: issuedAt))"
        _ = try await authenticator.caller(authorization: authorization, now: issuedAt)
        #expect(authenticator.loopCaller(authorization: authorization, now: issuedAt) != nil)
        for offset in stride(from: 80, through: 100, by: 2) {
            let now = issuedAt.addingTimeInterval(Double(offset))
            #expect((authenticator.loopCaller(authorization: authorization, now: now) != nil) == (offset < 90))
        }
        try await harness.stop()
    }

    /// A merge announced after the token was resolved for the loop path is seen on the loop path within a poll,
    /// though the entry's resolution lifetime (30 s) has not run out.
    @Test func aMergeReachesTheLoopPathWithinAPoll() async throws {
        let harness = try await GatewayHarness.start(["RAVE_GATEWAY_REVOCATION_POLL": "50ms"])
        let pipeline = harness.runtime.pipeline
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "guest-b"))
        func seen() async throws -> String {
            let response = try await connection.call(
                method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: options)
            return String(decoding: try EchoV1.EchoResponse(protobufBytes: response).payload, as: UTF8.self)
        }
        let before = pipeline.loopProxiedCalls.load(ordering: .relaxed)
        try await within(.seconds(5), "a call took the loop path") {
            let answer = try await seen()
            #expect(answer.hasPrefix("guest-b|"), "\(answer)")
            return pipeline.loopProxiedCalls.load(ordering: .relaxed) > before
        }
        harness.identity.merges.withLock { $0["guest-b"] = "bob" }
        harness.identity.merge("guest-b", into: "bob")
        try await within(.seconds(1), "the merged user's token acts as the target") {
            try await seen().hasPrefix("bob|")
        }
        // And the loop path serves it so from then on.
        let warm = pipeline.loopProxiedCalls.load(ordering: .relaxed)
        try await within(.seconds(5), "the target is served on the loop path") {
            let answer = try await seen()
            #expect(answer.hasPrefix("bob|"), "\(answer)")
            return pipeline.loopProxiedCalls.load(ordering: .relaxed) > warm
        }
        connection.close()
        try await harness.stop()
    }

    /// The host of a peer address, as the rate limits and the forwarded `rave-client-address` use it.
    @Test func hostOfAnAddress() {
        #expect(CallPipeline.host(of: "127.0.0.1:53122") == "127.0.0.1")
        #expect(CallPipeline.host(of: "[::1]:443") == "::1")
        #expect(CallPipeline.host(of: "[fe80::1%eth0]:80") == "fe80::1%eth0")
        #expect(CallPipeline.host(of: "[]:80") == "")
        #expect(CallPipeline.host(of: "localhost") == "localhost")
        #expect(CallPipeline.host(of: ":9") == "")
    }
}
