import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import Testing

@testable import Identity

/// Login throttling (docs/identity.md, "Login throttling").
///
/// Failures drain over the window, a success clears its pair, and neither a neighbour behind the same address nor an
/// attacker spread over many addresses locks a player out. Time moves by an injected clock.
@Suite("Login throttling")
struct LoginThrottleTests {
    static let password = "correct horse battery"

    /// A password account in a new app; returns the app id.
    static func account(_ harness: IdentityHarness, emails: [String]) async throws -> String {
        let app = try await harness.makeApplication()
        for email in emails {
            _ = try await harness.player.signUp(
                .init(
                    appId: app.appId, device: .init(deviceId: "signup-\(email)"), email: email, password: password,
                    birthYear: 1990, country: "FR"), context: IdentityHarness.anonymous)
        }
        return app.appId
    }

    /// Logs in from `address`; nil when it succeeded, else the status.
    static func login(
        _ harness: IdentityHarness, appID: String, email: String, password: String, from address: String
    ) async -> (code: StatusCode, message: String)? {
        await statusCode {
            _ = try await harness.player.loginWithPassword(
                .init(appId: appID, device: .init(deviceId: "d-\(address)"), email: email, password: password),
                context: IdentityHarness.context(caller: nil, metadata: ["rave-client-address": address]))
        }
    }

    @Test func failuresStopCountingOnceTheWindowHasPassed() async throws {
        let clock = TestClock()
        try await IdentityHarness.with(clock: clock) { harness in
            let app = try await Self.account(harness, emails: ["drain@example.com"])
            func attempt(_ password: String) async -> (code: StatusCode, message: String)? {
                await Self.login(
                    harness, appID: app, email: "drain@example.com", password: password, from: "198.51.100.4")
            }
            for _ in 0..<4 { #expect(await attempt("wrong password")?.code == .unauthenticated) }
            // Twelve minutes later those four have drained (5 per 15 minutes): four more mistakes are still allowed.
            clock.advance(by: 12 * 60)
            for _ in 0..<4 { #expect(await attempt("wrong password")?.code == .unauthenticated) }
            #expect(await attempt(Self.password) == nil)
            // The success emptied the pair: five mistakes, then the sixth attempt waits one drain step (180 s).
            for _ in 0..<5 { #expect(await attempt("wrong password")?.code == .unauthenticated) }
            let refused = await attempt(Self.password)
            #expect(refused?.code == .resourceExhausted)
            #expect(refused?.message == "too many failed logins; try again in 180 s")
            clock.advance(by: 179)
            #expect(await attempt(Self.password)?.message == "too many failed logins; try again in 1 s")
            clock.advance(by: 2)
            #expect(await attempt(Self.password) == nil)
        }
    }

    @Test func aSuccessClearsThePairsCount() async throws {
        try await IdentityHarness.with(clock: TestClock()) { harness in
            let app = try await Self.account(harness, emails: ["typo@example.com"])
            for _ in 0..<3 {
                for _ in 0..<4 {
                    let wrong = await Self.login(
                        harness, appID: app, email: "typo@example.com", password: "typo typo", from: "203.0.113.9")
                    #expect(wrong?.code == .unauthenticated)
                }
                #expect(
                    await Self.login(
                        harness, appID: app, email: "typo@example.com", password: Self.password, from: "203.0.113.9")
                        == nil)
            }
        }
    }

    @Test func onePlayerBehindASharedAddressDoesNotLockOutTheOthers() async throws {
        try await IdentityHarness.with(clock: TestClock()) { harness in
            let app = try await Self.account(harness, emails: ["clumsy@example.com", "neighbour@example.com"])
            var refused = 0
            for _ in 0..<12 {
                let status = await Self.login(
                    harness, appID: app, email: "clumsy@example.com", password: "not it", from: "192.0.2.50")
                if status?.code == .resourceExhausted { refused += 1 }
            }
            #expect(refused == 7)
            let neighbour = await Self.login(
                harness, appID: app, email: "neighbour@example.com", password: Self.password, from: "192.0.2.50")
            #expect(neighbour == nil)
        }
    }

    @Test func manyAddressesSlowAnAccountButNotItsOwnerAtAKnownAddress() async throws {
        let clock = TestClock()
        try await IdentityHarness.with(clock: clock) { harness in
            let app = try await Self.account(harness, emails: ["target@example.com"])
            let home = "198.51.100.77"
            #expect(
                await Self.login(harness, appID: app, email: "target@example.com", password: Self.password, from: home)
                    == nil)
            // Twenty addresses, one guess each, fill the account's allowance (20 per 15 minutes).
            for index in 0..<20 {
                let guess = await Self.login(
                    harness, appID: app, email: "target@example.com", password: "guess \(index)",
                    from: "10.1.0.\(index)")
                #expect(guess?.code == .unauthenticated)
            }
            let next = await Self.login(
                harness, appID: app, email: "target@example.com", password: "guess 21", from: "10.1.0.200")
            #expect(next?.code == .resourceExhausted)
            #expect(next?.message == "too many failed logins; try again in 45 s")
            // The owner, at an address that logged in before, is not held up.
            #expect(
                await Self.login(harness, appID: app, email: "target@example.com", password: Self.password, from: home)
                    == nil)
            // A new address waits one drain step (15 min / 20), no more.
            clock.advance(by: 45)
            #expect(
                await Self.login(
                    harness, appID: app, email: "target@example.com", password: Self.password, from: "10.2.0.1") == nil)
        }
    }

    @Test func oneAddressGuessingManyAccountsIsSlowed() async throws {
        let clock = TestClock()
        try await IdentityHarness.with(configure: { $0.loginThrottle.perAddress = 10 }, clock: clock) { harness in
            let app = try await Self.account(harness, emails: ["victim@example.com"])
            for index in 0..<10 {
                let guess = await Self.login(
                    harness, appID: app, email: "user\(index)@example.com", password: "123456", from: "233.252.0.1")
                #expect(guess?.code == .unauthenticated)
            }
            let eleventh = await Self.login(
                harness, appID: app, email: "victim@example.com", password: "123456", from: "233.252.0.1")
            #expect(eleventh?.code == .resourceExhausted)
            #expect(eleventh?.message == "too many failed logins; try again in 90 s")
            // Other addresses are not affected; the stuffing address gets one attempt per drain step.
            #expect(
                await Self.login(
                    harness, appID: app, email: "victim@example.com", password: Self.password, from: "233.252.0.2")
                    == nil)
            clock.advance(by: 90)
            let later = await Self.login(
                harness, appID: app, email: "user10@example.com", password: "123456", from: "233.252.0.1")
            #expect(later?.code == .unauthenticated)
        }
    }

    @Test func sweepDeletesOnlyCountersThatHoldNothing() async throws {
        let clock = TestClock()
        try await IdentityHarness.with(clock: clock) { harness in
            let app = try await Self.account(harness, emails: ["sweep@example.com"])
            _ = await Self.login(harness, appID: app, email: "sweep@example.com", password: "nope", from: "192.0.2.1")
            _ = await Self.login(
                harness, appID: app, email: "sweep@example.com", password: Self.password, from: "192.0.2.2")
            #expect(try await harness.dependencies.loginThrottle.sweep() == 0)
            // After the window the failures have drained; the successful pair is kept while it is trusted.
            clock.advance(by: 901)
            let keys = try await harness.dependencies.loginThrottle.sweep()
            #expect(keys == 4)  // the failed pair, the two addresses, the account
            let left = try await harness.pool.execute(
                PostgresStatement(name: "test_throttle_keys", sql: "SELECT key FROM login_throttle ORDER BY key"), [])
            #expect(
                try left.map { try $0.decode(String.self, column: "key") } == [
                    "password:pair:192.0.2.2 sweep@example.com"
                ])
            clock.advance(by: 30 * 24 * 3600)
            #expect(try await harness.dependencies.loginThrottle.sweep() == 1)
        }
    }

    // MARK: - Arithmetic, without a database

    @Test func decisionsDrainLinearlyAndNameTheWait() {
        let policy = LoginThrottle.Policy()
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        let keys = LoginThrottle.Keys(scope: .password, account: "a@example.com", address: "192.0.2.1")
        #expect(keys.pair == "password:pair:192.0.2.1 a@example.com")
        func counter(
            _ failures: Double, secondsAgo: TimeInterval, succeeded: TimeInterval? = nil
        )
            -> LoginThrottle.Counter
        {
            .init(
                failures: failures, updatedAt: now.addingTimeInterval(-secondsAgo),
                succeededAt: succeeded.map { now.addingTimeInterval(-$0) })
        }
        // Nothing stored: every counter is charged one.
        #expect(
            LoginThrottle.decide(keys: keys, counters: [:], policy: policy, now: now)
                == .allowed([keys.pair!: 1, keys.account: 1, keys.address!: 1]))
        // A full pair drained for 90 s (half a step) still has no room: 90 s more.
        #expect(
            LoginThrottle.decide(
                keys: keys, counters: [keys.pair!: counter(5, secondsAgo: 90)], policy: policy, now: now)
                == .refused(wait: 90))
        // A pair that succeeded yesterday is charged alone, even with the account full.
        let trusted: [String: LoginThrottle.Counter] = [
            keys.pair!: counter(0, secondsAgo: 86_400, succeeded: 86_400), keys.account: counter(20, secondsAgo: 0),
        ]
        #expect(
            LoginThrottle.decide(keys: keys, counters: trusted, policy: policy, now: now) == .allowed([keys.pair!: 1]))
        // Trust ends after 30 days.
        var expired = trusted
        expired[keys.pair!] = counter(0, secondsAgo: 31 * 86_400, succeeded: 31 * 86_400)
        #expect(LoginThrottle.decide(keys: keys, counters: expired, policy: policy, now: now) == .refused(wait: 45))
        // Without an address only the account counts.
        let direct = LoginThrottle.Keys(scope: .twoFactor, account: "user", address: nil)
        #expect(direct.pair == nil && direct.address == nil && direct.account == "2fa:account:user")
    }

    @Test func ipv6AddressesCountByTheirSlash64() {
        #expect(LoginThrottle.network(of: "2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(LoginThrottle.network(of: "2001:db8:1:2:ffff:ffff:ffff:fffe") == "2001:db8:1:2::/64")
        #expect(LoginThrottle.network(of: "::ffff:192.0.2.8") == "192.0.2.8")
        #expect(LoginThrottle.network(of: "192.0.2.8") == "192.0.2.8")
        #expect(LoginThrottle.network(of: "not an address") == "not an address")
    }
}
