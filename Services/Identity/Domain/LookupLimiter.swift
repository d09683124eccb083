import RaveRPC
import Synchronization

/// How many FindUser lookups by email or username a caller may make: a budget per user and a larger one per client
/// address (guests cost nothing to create), each refilling steadily.
///
/// Kept per identity process (N replicas allow N times the budget): it bounds enumeration, it does not meter
/// anything. The clock is passed in, so the arithmetic is tested without sleeping.
final class LookupLimiter: Sendable {
    /// Lookups a user may make at once, and per minute after that.
    let perUser: Double
    /// Lookups a client address may make at once, and per minute after that.
    let perAddress: Double
    private let capacity: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    private struct Bucket {
        var tokens: Double
        var updatedAt: ContinuousClock.Instant
    }

    init(perUserPerMinute: Int, perAddressPerMinute: Int, capacity: Int = 100_000) {
        perUser = Double(perUserPerMinute)
        perAddress = Double(perAddressPerMinute)
        self.capacity = capacity
    }

    /// Spends one lookup of `user` and of `address` (when known), or throws RESOURCE_EXHAUSTED with the wait; a
    /// refused lookup spends nothing.
    func charge(user: String, address: String?, now: ContinuousClock.Instant = .now) throws(IdentityError) {
        var keys = [("user:" + user, perUser)]
        if let address, !address.isEmpty { keys.append(("address:" + address, perAddress)) }
        let wait = buckets.withLock { buckets -> Duration? in
            if buckets.count + keys.count > capacity { forgetFull(&buckets, now: now) }
            var refilled: [(String, Bucket)] = []
            for (key, budget) in keys {
                var bucket = buckets[key] ?? Bucket(tokens: budget, updatedAt: now)
                let elapsed = now - bucket.updatedAt
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                bucket.tokens = min(budget, bucket.tokens + max(0, seconds) * budget / 60)
                bucket.updatedAt = now
                guard bucket.tokens >= 1 else { return .seconds((1 - bucket.tokens) * 60 / budget) }
                refilled.append((key, bucket))
            }
            for (key, var bucket) in refilled {
                bucket.tokens -= 1
                buckets[key] = bucket
            }
            return nil
        }
        guard let wait else { return }
        let seconds = max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
        throw .resourceExhausted("too many user lookups; try again in \(seconds) s")
    }

    /// Forgets buckets that have refilled (they hold no information); if none has, the table starts over, which
    /// can only be more lenient.
    private func forgetFull(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        buckets = buckets.filter { key, bucket in
            let budget = key.hasPrefix("user:") ? perUser : perAddress
            let elapsed = now - bucket.updatedAt
            return bucket.tokens + Double(elapsed.components.seconds) * budget / 60 < budget
        }
        if buckets.count >= capacity { buckets.removeAll() }
    }
}
