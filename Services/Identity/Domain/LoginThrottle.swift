import Foundation
import RavePostgres
import RaveRPC
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Slows password and two-factor guessing without handing anyone a way to lock players out (docs/identity.md,
/// "Login throttling").
///
/// Every attempt is charged, before the password is hashed or the code checked, to up to three counters:
///
/// - the **pair** (client address, account): the one that stops a guesser at one address, `perPair` failures per
///   window; a success clears it, so a player who mistyped is back to a full allowance at once;
/// - the **account**, from every address together: `perAccount` per window, so guesses spread over many addresses
///   are slowed too;
/// - the **address**, over every account: `perAddress` per window, against credential stuffing from one address.
///
/// Counts drain linearly: a counter at its limit loses one failure every `window / limit`, so it is empty one
/// window after its last failure, and an attacker who keeps trying gets one attempt per `window / limit` per
/// counter, never more, never a lockout. A success refunds its charge on the account and the address.
///
/// A pair that succeeded within `trustedPairLifetime` counts against its pair only: the owner logging in from an
/// address they used before gets through while others hammer the account or share the address (a NAT). The clock
/// is injected, so tests move time instead of sleeping.
final class LoginThrottle: Sendable {
    /// The limits; every count drains over `window`.
    struct Policy: Sendable, Hashable {
        /// How long a failure counts at most (a counter drains completely over one window).
        var window: TimeInterval = 900
        /// Failures per window of one account from one address.
        var perPair = 5
        /// Failures per window of one account from addresses without a recent success on it.
        var perAccount = 20
        /// Failures per window from one address over every account it has no recent success on.
        var perAddress = 100
        /// How long after a success a pair counts against itself only.
        var trustedPairLifetime: TimeInterval = 30 * 24 * 3600
    }

    /// What is being guessed; each has its own counters and its own message.
    enum Scope: String, Sendable {
        case password
        case twoFactor = "2fa"

        var refusal: String {
            switch self {
            case .password: "too many failed logins"
            case .twoFactor: "too many wrong codes"
            }
        }
    }

    /// The counters one attempt is charged to: the pair and the address only when the address is known.
    struct Keys: Sendable, Hashable {
        var pair: String?
        var account: String
        var address: String?

        init(scope: Scope, account: String, address: String?) {
            self.account = "\(scope.rawValue):account:\(account)"
            let network = address.flatMap { $0.isEmpty ? nil : LoginThrottle.network(of: $0) }
            self.address = network.map { "\(scope.rawValue):address:\($0)" }
            pair = network.map { "\(scope.rawValue):pair:\($0) \(account)" }
        }
    }

    /// A counter as stored: the failures as of `updatedAt`, and (pairs) the last success.
    struct Counter: Sendable, Hashable {
        var failures: Double
        var updatedAt: Date
        var succeededAt: Date?
    }

    /// What `decide` says about one attempt.
    enum Decision: Sendable, Equatable {
        /// Let through; each charged counter's new count (as of now).
        case allowed([String: Double])
        /// Refused; the wait until every counter has room again.
        case refused(wait: TimeInterval)
    }

    /// An attempt that was let through.
    struct Attempt: Sendable {
        let keys: Keys
        /// The counters charged (the pair alone, for a trusted pair).
        let charged: [String]
    }

    let policy: Policy
    let clock: @Sendable () -> Date
    let pool: PostgresPool

    init(pool: PostgresPool, policy: Policy, clock: @escaping @Sendable () -> Date) {
        self.pool = pool
        self.policy = policy
        self.clock = clock
    }

    /// Charges one attempt of `account` from `address`, or throws RESOURCE_EXHAUSTED with the wait.
    private func admit(_ scope: Scope, account: String, address: String?) async throws -> Attempt {
        let keys = Keys(scope: scope, account: account, address: address)
        let now = clock()
        let decision: Decision = try await pool.transaction { transaction in
            let store = LoginThrottleStore(database: transaction)
            let decision = Self.decide(
                keys: keys, counters: try await store.lock(keys, now: now), policy: policy, now: now)
            if case .allowed(let charges) = decision { try await store.charge(charges, now: now) }
            return decision
        }
        switch decision {
        case .allowed(let charges):
            return Attempt(keys: keys, charged: Array(charges.keys))
        case .refused(let wait):
            // Rounded up, less a millisecond of floating-point dust (a wait of exactly 45 s must not read 46).
            let seconds = max(1, Int((wait - 0.001).rounded(.up)))
            throw IdentityError.resourceExhausted("\(scope.refusal); try again in \(seconds) s")
        }
    }

    /// Charges an attempt (`admit`), then runs `check`: nil means a wrong password or code, whose charge stays; a
    /// value means success, which clears the pair (and marks it trusted) and refunds the account's and the address's
    /// charge; an error means the attempt was no guess (the database failed, the enrolment was gone), and the whole
    /// charge is refunded.
    func attempt<Result>(
        _ scope: Scope, account: String, address: String?, _ check: () async throws -> Result?
    ) async throws -> Result? {
        let attempt = try await admit(scope, account: account, address: address)
        let store = LoginThrottleStore(database: pool)
        let result: Result?
        do {
            result = try await check()
        } catch {
            // Best effort: failing to refund only leaves the attempt counted, as a wrong guess would be.
            try? await store.refund(attempt.charged, clearing: nil, now: clock())
            throw error
        }
        if result != nil {
            try await store.refund(attempt.charged, clearing: attempt.keys.pair, now: clock())
        }
        return result
    }

    /// Deletes counters that hold nothing any more: drained, and no success within the trusted lifetime.
    @discardableResult
    func sweep() async throws -> Int {
        let now = clock()
        return try await LoginThrottleStore(database: pool).deleteIdle(
            drainedBefore: now.addingTimeInterval(-policy.window),
            succeededBefore: now.addingTimeInterval(-policy.trustedPairLifetime))
    }

    // MARK: - Decisions

    /// Charges one failure to each counter that applies, if each has room for it.
    static func decide(keys: Keys, counters: [String: Counter], policy: Policy, now: Date) -> Decision {
        var limits: [(key: String, limit: Int)] = []
        if let pair = keys.pair { limits.append((pair, policy.perPair)) }
        let trusted =
            keys.pair.flatMap { counters[$0]?.succeededAt }.map {
                now.timeIntervalSince($0) < policy.trustedPairLifetime
            } ?? false
        if !trusted {
            limits.append((keys.account, policy.perAccount))
            if let address = keys.address { limits.append((address, policy.perAddress)) }
        }
        var charges: [String: Double] = [:]
        var wait: TimeInterval = 0
        for (key, limit) in limits {
            let count = counters[key].map { current($0, limit: limit, policy: policy, now: now) } ?? 0
            // A hair of slack, so a count that has drained to exactly the limit's edge is not refused by rounding.
            if count + 1 > Double(limit) + 1e-9 {
                wait = max(wait, (count + 1 - Double(limit)) * policy.window / Double(limit))
            }
            charges[key] = count + 1
        }
        return wait > 0 ? .refused(wait: wait) : .allowed(charges)
    }

    /// The counter's failures drained up to `now`: `limit` per window.
    static func current(_ counter: Counter, limit: Int, policy: Policy, now: Date) -> Double {
        let elapsed = max(0, now.timeIntervalSince(counter.updatedAt))
        return max(0, counter.failures - elapsed * Double(limit) / policy.window)
    }

    /// The network an address counts for: IPv4 addresses as they are, IPv6 addresses by their /64 (one subscriber's
    /// allocation: counting each of its 2^64 addresses apart would count nothing); anything else as it is.
    static func network(of address: String) -> String {
        #if canImport(Glibc)
        var bytes = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        let octets = withUnsafeBytes(of: &bytes) { Array($0) }
        if octets[0..<10].allSatisfy({ $0 == 0 }) && octets[10] == 0xff && octets[11] == 0xff {
            return octets[12..<16].map { String($0) }.joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map {
            String(UInt16(octets[$0]) << 8 | UInt16(octets[$0 + 1]), radix: 16)
        }
        return groups.joined(separator: ":") + "::/64"
        #else
        return address
        #endif
    }
}
