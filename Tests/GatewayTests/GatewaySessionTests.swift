import Foundation
import RaveAuth
import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// Sessions end access at once, expiry is one rule on every path, and restricted tokens reach only their methods:
/// end to end over TLS, client → gateway → service, with the identity stand-in's revocation feed.
@Suite("Gateway sessions and scopes")
struct GatewaySessionTests {
    static let whoami = EchoV1.EchoRequest(payload: Array("whoami".utf8)).protobufBytes()

    /// A revoked session's token is refused within a second on the general path, the loop path and in batches
    /// (loop and general), while another session of the same user keeps working.
    @Test func revokedSessionIsRefusedWithinASecondOnEveryPath() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"))
        let other = bearer(
            try harness.signer.issue(
                subject: "user-1", applicationID: "app-1", sessionID: "other-session", scopes: ["player"]
            ).token)
        try await warmUpLoopPath(harness, connection, options: options)

        harness.identity.revoke("session-user-1")
        try await within(.seconds(1), "the revoked session's token is refused") {
            await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: options)?.code
                == .unauthenticated
        }
        // Every path now refuses it, and says why; the cached token did not let the loop path serve it.
        let proxied = harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed)
        for _ in 0..<3 {
            let error = await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: options)
            #expect(error?.code == .unauthenticated)
            #expect(error?.message.contains("session has ended") == true, "\(error?.message ?? "")")
        }
        #expect(harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed) == proxied)
        let batch = try await connection.call(
            method: BatchPlan.batchMethod,
            request: BatchTests.batch([BatchTests.call("a"), BatchTests.call("b", dependsOn: ["a"])]).protobufBytes(),
            options: options)
        let results = try GatewayV1.BatchResponse(protobufBytes: batch).results
        #expect(results.first?.code == .unauthenticated)
        #expect(results.last?.dependencyFailed == true)
        // The same user's other session is untouched.
        #expect(await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: other) == nil)
        connection.close()
        try await harness.stop()
    }

    /// An entry is forgotten once identity says every token of its session has expired; the others stay.
    @Test func revocationsAreForgottenOnceTheirTokensHaveExpired() async throws {
        let harness = try await GatewayHarness.start(["RAVE_GATEWAY_REVOCATION_POLL": "50ms"])
        let feed = harness.runtime.revocations
        let past = Int64(Date().timeIntervalSince1970 * 1000) - 1000
        harness.identity.revoke("expired-session", expiresAt: past)
        harness.identity.revoke("live-session")
        try await within(.seconds(3), "the revocations were read") {
            feed.verdict(sessionID: "live-session") == .revoked
        }
        // Pruning walks the set at most every 5 s.
        try await within(.seconds(15), "the expired entry was pruned") { feed.count == 1 }
        #expect(feed.verdict(sessionID: "expired-session") == .live)
        #expect(feed.verdict(sessionID: "live-session") == .revoked)
        try await harness.stop()
    }

    /// Identity unreachable for longer than the allowed staleness: token-bearing calls are refused UNAVAILABLE
    /// (not processed, so another replica may take them) and `/readyz` says why; once the feed answers, they work.
    @Test func staleRevocationFeedFailsClosedAndRecovers() async throws {
        let harness = try await GatewayHarness.start([
            "RAVE_GATEWAY_REVOCATION_POLL": "50ms", "RAVE_GATEWAY_REVOCATION_MAX_STALENESS": "1s",
        ])
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"))
        try await within(.seconds(10), "calls are served while the feed is read") {
            await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: options) == nil
        }

        harness.identity.revocationFeedDown.store(true, ordering: .relaxed)
        try await within(.seconds(10), "calls are refused while the feed is stale") {
            await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: options)?.code == .unavailable
        }
        let error = await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: options)
        #expect(error?.notProcessed == true)
        #expect(error?.message.contains("revocation feed") == true, "\(error?.message ?? "")")
        let report = await harness.runtime.readiness.evaluate()
        #expect(report.results.contains { $0.name == "revocations" && $0.failure != nil }, "\(report.text)")
        // Calls without a token do not depend on the feed.
        #expect(await failure(connection, "rave.rpc.v1.Health/Check") == nil)

        harness.identity.revocationFeedDown.store(false, ordering: .relaxed)
        try await within(.seconds(10), "calls are served again") {
            await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: options) == nil
        }
        connection.close()
        try await harness.stop()
    }

    /// A token inside the clock-skew window after `exp` is accepted on every call; one past it is refused on
    /// every call. (The token cache used to say "expired" where verification said "live", so calls alternated.)
    @Test func expiredTokenAnswersTheSameOnEveryCall() async throws {
        let harness = try await GatewayHarness.start()
        let connection = try await harness.connect()
        let justExpired = bearer(try harness.token(for: "user-1", lifetime: 900, now: Date().addingTimeInterval(-905)))
        let longExpired = bearer(try harness.token(for: "user-2", lifetime: 900, now: Date().addingTimeInterval(-960)))
        var answers: [StatusCode] = []
        var longAnswers: [StatusCode] = []
        for _ in 0..<4 {
            let error = await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: justExpired)
            answers.append(error?.code ?? .ok)
            let long = await failure(connection, "rave.echo.v1.Echo/Echo", Self.whoami, options: longExpired)
            longAnswers.append(long?.code ?? .ok)
        }
        #expect(answers == [.ok, .ok, .ok, .ok])
        #expect(longAnswers == Array(repeating: .unauthenticated, count: 4))
        connection.close()
        try await harness.stop()
    }

    /// With an injected clock, the verifying path and the cached path agree at every second around the end.
    @Test func cachedAndVerifiedPathsAgreeOnExpiry() async throws {
        let harness = try await GatewayHarness.start()
        let authenticator = harness.runtime.pipeline.authenticator
        let issuedAt = Date()
        let token = try harness.token(for: "user-1", lifetime: 60, now: issuedAt)
        let authorization = "Bearer \(token)"
        _ = try await authenticator.caller(authorization: authorization, now: issuedAt)
        for offset in stride(from: 50, through: 100, by: 2) {
            let now = issuedAt.addingTimeInterval(Double(offset))
            let cached = authenticator.cachedCaller(authorization: authorization, now: now) != nil
            let verified: Bool
            do {
                _ = try await authenticator.caller(authorization: authorization, now: now)
                verified = true
            } catch {
                verified = false
            }
            // Asked again after `caller` (which drops an expired token from the cache): still the same answer.
            let cachedAgain = authenticator.cachedCaller(authorization: authorization, now: now) != nil
            #expect(cached == verified && cachedAgain == verified, "at +\(offset) s")
            #expect(verified == (offset < 90), "at +\(offset) s")
        }
        try await harness.stop()
    }

    /// The betting SDK's unbacked token reaches the wallet's betting methods only: every other method, single or
    /// in a batch, and the login methods are PERMISSION_DENIED before any service is called.
    @Test func unbackedTokenReachesOnlyTheWalletsBettingMethods() async throws {
        let harness = try await GatewayHarness.start(withWallet: true)
        let connection = try await harness.connect()
        let unbacked = bearer(try harness.token(for: "user-1", scopes: ["player", ScopePolicy.unbackedOnlyScope]))
        let bet = BatchBetTests.bet("spin1").request
        for _ in 0..<3 {
            #expect(await failure(connection, BetCoalescer.placeBetMethod, bet, options: unbacked) == nil)
        }
        for method in [
            "rave.echo.v1.Echo/Echo", "rave.identity.v1.Identity/UpdateCurrentUser",
            "rave.identity.v1.Identity/ListSessions", "rave.identity.v1.Identity/Logout",
            "rave.social.v1.Social/SendFriendRequest", "rave.gifts.v1.Gifts/ListGifts",
            "rave.wallet.v1.Wallet/GetWallet", "rave.identity.v1.Identity/LoginWithProvider",
        ] {
            // Twice: a second call finds the token cached and must not slip through the loop path.
            for _ in 0..<2 {
                let error = await failure(connection, method, Self.whoami, options: unbacked)
                #expect(error?.code == .permissionDenied, "\(method): \(error?.message ?? "served")")
            }
        }
        let results = try GatewayV1.BatchResponse(
            protobufBytes: try await connection.call(
                method: BatchPlan.batchMethod,
                request: BatchTests.batch([BatchBetTests.bet("spin2"), BatchTests.call("echo", payload: "whoami")])
                    .protobufBytes(),
                options: unbacked)
        ).results
        #expect(results.map(\.code) == [.ok, .permissionDenied])
        #expect(harness.echo.remainingMilliseconds.withLock { $0.isEmpty })
        connection.close()
        try await harness.stop()
    }

    /// Calls until one took the loop path, so the token is cached and the loop's backend connection is open.
    private func warmUpLoopPath(
        _ harness: GatewayHarness, _ connection: RPCConnection, options: CallOptions
    ) async throws {
        let before = harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed)
        try await within(.seconds(5), "a call took the loop path") {
            _ = try await connection.call(method: "rave.echo.v1.Echo/Echo", request: Self.whoami, options: options)
            return harness.runtime.pipeline.loopProxiedCalls.load(ordering: .relaxed) > before
        }
    }
}

/// Polls `condition` every 20 ms until it holds, failing when `limit` passes first; never a fixed sleep.
func within(_ limit: Duration, _ description: String, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await condition() { return }
        guard ContinuousClock.now < deadline else {
            Issue.record("not within \(limit): \(description)")
            return
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

@Suite("Scope policy")
struct ScopePolicyTests {
    @Test(arguments: [
        "rave.wallet.v1.Wallet/PlaceBet", "rave.wallet.v1.Wallet/PlaceBets", "rave.wallet.v1.Wallet/ListGames",
        "rave.wallet.v1.Wallet/GetServerSeed", "rave.wallet.v1.Wallet/RotateServerSeed",
        "rave.wallet.v1.Wallet/VerifyBet",
    ])
    func unbackedTokenReachesTheBettingMethods(method: String) {
        #expect(ScopePolicy.refusal(method: method, scopes: ["player", ScopePolicy.unbackedOnlyScope]) == nil)
    }

    @Test(arguments: [
        "rave.identity.v1.Identity/UpdateCurrentUser", "rave.identity.v1.Identity/GetCurrentUser",
        "rave.identity.v1.Identity/ListSessions", "rave.identity.v1.Identity/Logout",
        "rave.identity.v1.Identity/RevokeSession", "rave.identity.v1.Identity/IssueUnbackedToken",
        "rave.identity.v1.Identity/LoginWithProvider", "rave.identity.v1.Identity/RefreshSession",
        "rave.social.v1.Social/SendFriendRequest", "rave.gifts.v1.Gifts/ListGifts", "rave.push.v1.Push/RegisterToken",
        "rave.leaderboards.v1.Leaderboards/SubmitScore", "rave.wallet.v1.Wallet/GetWallet",
        "rave.wallet.v1.Wallet/GetAccount", "rave.wallet.v1.Wallet/ListTransactions",
        "rave.wallet.v1.WalletAdmin/Deposit", "rave.gateway.v1.Gateway/Batch", "rave.wallet.v1.Wallet/PlaceBet/x", "",
    ])
    func unbackedTokenIsRefusedEverythingElse(method: String) {
        let refusal = ScopePolicy.refusal(method: method, scopes: [ScopePolicy.unbackedOnlyScope, "player"])
        #expect(refusal?.code == .permissionDenied)
        #expect(refusal?.message.contains("wallet:unbacked") == true)
    }

    @Test func playerAndAdminScopesAreNotRestricted() {
        for scopes: Set<String> in [["player"], ["player", "guest"], ["player", "authenticated"], ["admin"], []] {
            #expect(!ScopePolicy.isRestricted(scopes))
            #expect(ScopePolicy.refusal(method: "rave.identity.v1.Identity/UpdateCurrentUser", scopes: scopes) == nil)
        }
        #expect(ScopePolicy.isRestricted(["player", "authenticated", ScopePolicy.unbackedOnlyScope]))
    }
}
