import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// Rate limits, load shedding and size limits: the pure parts directly, the wiring end to end.
@Suite("Gateway protection")
struct GatewayProtectionTests {
    @Test func tokenBucketAllowsBurstThenRefillsAtTheRate() {
        var bucket = TokenBucket(limit: RateLimit(perSecond: 10, burst: 3), now: 0)
        #expect(bucket.take(1, now: 0) == nil)
        #expect(bucket.take(1, now: 0) == nil)
        #expect(bucket.take(1, now: 0) == nil)
        #expect(bucket.take(1, now: 0) == 100_000_000)
        #expect(bucket.take(1, now: 100_000_000) == nil)
        #expect(!bucket.isFull(now: 100_000_000))
        #expect(bucket.isFull(now: 1_000_000_000))
        // A cost above the burst is charged as the whole burst.
        #expect(bucket.take(50, now: 1_000_000_000) == nil)
    }

    @Test func rateLimiterReportsRetryAfterInMessageAndDetails() throws {
        let limiter = RateLimiter(subject: "user", limit: RateLimit(perSecond: 2, burst: 1))
        try limiter.charge("u", now: 0)
        let error = #expect(throws: RPCError.self) { try limiter.charge("u", now: 0) }
        #expect(error?.code == .resourceExhausted)
        #expect(error?.notProcessed == true)
        #expect(error?.message.contains("retry after 500 ms") == true)
        #expect(try GatewayV1.RetryInfo(protobufBytes: error?.details ?? []).retryAfterMs == 500)
        // Other keys have their own bucket.
        try limiter.charge("v", now: 0)
    }

    @Test func rateLimiterStaysBounded() throws {
        let limiter = RateLimiter(subject: "address", limit: RateLimit(perSecond: 1, burst: 5), capacity: 100)
        for index in 0..<1000 { try limiter.charge("key-\(index)", now: 0) }
        #expect(limiter.trackedKeys <= 100)
    }

    @Test func inFlightLimiterShedsAboveTheMaximum() throws {
        let limiter = InFlightLimiter(maximum: 2)
        try limiter.enter()
        try limiter.enter()
        let error = #expect(throws: RPCError.self) { try limiter.enter() }
        #expect(error?.code == .resourceExhausted)
        #expect(error?.notProcessed == true)
        limiter.leave()
        try limiter.enter()
        #expect(limiter.current == 2)
    }

    @Test func leastRecentlyUsedEvictsTheOldest() {
        var cache = LeastRecentlyUsed<String, Int>(capacity: 2)
        cache.insert(1, for: "a")
        cache.insert(2, for: "b")
        #expect(cache.value(for: "a") == 1)
        cache.insert(3, for: "c")
        #expect(cache.value(for: "b") == nil)
        #expect(cache.value(for: "a") == 1)
        cache.remove("a")
        cache.insert(4, for: "d")
        cache.insert(5, for: "a")
        #expect(cache.count == 2)
        #expect(cache.value(for: "c") == nil)
        #expect(cache.value(for: "d") == 4)
        #expect(cache.value(for: "a") == 5)
    }

    @Test func methodRoutesFollowTheServiceSuffix() throws {
        let install = try MethodRoute(method: "rave.gifts.v1.GiftsInstall/ResolveInstallLink")
        #expect(install.service == "gifts" && install.access == .anonymous)
        #expect(try MethodRoute(method: "rave.gifts.v1.Gifts/SendGifts").access == .player)
        #expect(try MethodRoute(method: "rave.gifts.v1.GiftsAdmin/CreateGiftType").access == .admin)
        let bets = try MethodRoute(method: "rave.wallet.v1.Wallet/PlaceBets")
        #expect(bets.service == "wallet" && bets.access == .player)
        #expect(try MethodRoute(method: "rave.wallet.v1.WalletAdmin/Deposit").access == .admin)
        #expect(try MethodRoute(method: "rave.identity.v1.Identity/GuestLogin").access == .login)
        let error = #expect(throws: RPCError.self) {
            try MethodRoute(method: "rave.identity.v1.IdentityInternal/ResolveUsers")
        }
        #expect(error?.code == .permissionDenied)
        let unknown = #expect(throws: RPCError.self) { try MethodRoute(method: "rave.wallet.v1.Wallet/Nope") }
        #expect(unknown?.code == .unimplemented)
    }

    @Test func perUserRateLimitAndRequestSizeEndToEnd() async throws {
        let harness = try await GatewayHarness.start([
            "RAVE_GATEWAY_USER_RATE": "1", "RAVE_GATEWAY_USER_BURST": "2", "RAVE_GATEWAY_MAX_REQUEST": "1KiB",
        ])
        let connection = try await harness.connect()
        let options = bearer(try harness.token(for: "user-1"))
        let small = EchoV1.EchoRequest(payload: [1]).protobufBytes()
        // The bucket holds 2 and refills 1 a second: calls in a row pass until it is empty, at most the burst plus
        // what refilled meanwhile (a slow machine may take more than a second over the first two).
        let clock = ContinuousClock()
        let start = clock.now
        var passed = 0
        var limited: RPCError?
        while limited == nil && passed < 50 {
            limited = await failure(connection, "rave.echo.v1.Echo/Echo", small, options: options)
            if limited == nil { passed += 1 }
        }
        let elapsed = start.duration(to: clock.now)
        #expect(limited?.code == .resourceExhausted)
        #expect(passed >= 2)
        #expect(Double(passed) <= 2 + (Double(elapsed.components.seconds) + 1), "\(passed) calls in \(elapsed)")
        #expect(limited?.message.contains("retry after") == true)
        // Another user is not affected.
        _ = try await connection.call(
            method: "rave.echo.v1.Echo/Echo", request: small, options: bearer(try harness.token(for: "user-2")))
        let large = EchoV1.EchoRequest(payload: Array(repeating: 7, count: 2000)).protobufBytes()
        let tooLarge = await failure(
            connection, "rave.echo.v1.Echo/Echo", large, options: bearer(try harness.token(for: "user-3")))
        #expect(tooLarge?.code == .invalidArgument)
        connection.close()
        try await harness.stop()
    }
}

/// A client holding many connections is refused beyond its share, and gets room again when it closes some.
@Suite("Gateway connection limits")
struct GatewayConnectionLimitTests {
    @Test func connectionsBeyondThePerAddressLimitAreRefused() async throws {
        let harness = try await GatewayHarness.start(["RAVE_GATEWAY_MAX_CONNECTIONS_PER_ADDRESS": "3"])
        var open: [RPCConnection] = []
        for _ in 0..<3 { open.append(try await harness.connect()) }
        let token = try harness.token(for: "user-1")
        for connection in open {
            #expect(await failure(connection, "rave.echo.v1.Echo/Echo", [], options: bearer(token)) == nil)
        }
        // The fourth is closed right after its TLS handshake with RESOURCE_EXHAUSTED.
        var refused: RPCError?
        do {
            let extra = try await harness.connect()
            refused = await failure(extra, "rave.echo.v1.Echo/Echo", [], options: bearer(token))
            extra.close()
        } catch {
            refused = error as? RPCError ?? RPCError.unavailable("\(error)")
        }
        #expect(refused != nil)
        // Closing one makes room (the gateway learns of the close asynchronously).
        open.removeFirst().close()
        var accepted = false
        for _ in 0..<100 where !accepted {
            if let again = try? await harness.connect() {
                accepted = await failure(again, "rave.echo.v1.Echo/Echo", [], options: bearer(token)) == nil
                again.close()
            }
            if !accepted { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(accepted)
        for connection in open { connection.close() }
        try await harness.stop()
    }
}
