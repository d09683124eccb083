import RaveMessages
import RaveRPC
import RaveTransport
import Synchronization

/// Token buckets per key (a user id, a client address), with a bounded number of keys.
///
/// Full buckets carry no information, so when the table reaches `capacity` they are dropped first; if every
/// bucket is in use the oldest-inserted tenth goes, which can only make the limiter more lenient, never stuck.
final class RateLimiter: Sendable {
    /// What the limiter is keyed by, for the message a throttled client reads.
    let subject: String
    let limit: RateLimit
    private let capacity: Int
    private let buckets = Mutex<[String: TokenBucket]>([:])

    init(subject: String, limit: RateLimit, capacity: Int = 100_000) {
        self.subject = subject
        self.limit = limit
        self.capacity = capacity
    }

    /// Charges `cost` calls to `key`, or throws RESOURCE_EXHAUSTED (not processed) with the wait in the message
    /// and a `rave.gateway.v1.RetryInfo` in the details.
    func charge(_ key: String, cost: Int = 1, now: UInt64 = monotonicNanoseconds()) throws(RPCError) {
        let wait = buckets.withLock { buckets -> UInt64? in
            // One hash of the key for a known bucket, the common case.
            if let index = buckets.index(forKey: key) { return buckets.values[index].take(Double(cost), now: now) }
            if buckets.count >= capacity { evict(from: &buckets, now: now) }
            var bucket = TokenBucket(limit: limit, now: now)
            let wait = bucket.take(Double(cost), now: now)
            buckets[key] = bucket
            return wait
        }
        guard let wait else { return }
        let milliseconds = max(1, (wait + 999_999) / 1_000_000)
        var info = GatewayV1.RetryInfo()
        info.retryAfterMs = UInt32(clamping: milliseconds)
        throw RPCError(
            .resourceExhausted,
            "too many calls for this \(subject): at most \(Int(limit.perSecond)) per second (bursts of "
                + "\(Int(limit.burst))); retry after \(milliseconds) ms",
            details: info.protobufBytes(), notProcessed: true)
    }

    /// Keys currently tracked.
    var trackedKeys: Int { buckets.withLock { $0.count } }

    private func evict(from buckets: inout [String: TokenBucket], now: UInt64) {
        let full = buckets.keys.filter { buckets[$0]?.isFull(now: now) == true }
        for key in full { buckets[key] = nil }
        if buckets.count >= capacity {
            for key in buckets.keys.prefix(max(1, capacity / 10)) { buckets[key] = nil }
        }
    }
}

/// Counts requests being handled and sheds those above the maximum instead of queueing them.
final class InFlightLimiter: Sendable {
    let maximum: Int
    private let count = Atomic<Int>(0)

    init(maximum: Int) {
        self.maximum = maximum
    }

    /// Admits one request, or throws RESOURCE_EXHAUSTED (not processed: another gateway may take it).
    func enter() throws(RPCError) {
        let now = count.wrappingAdd(1, ordering: .relaxed).newValue
        guard now <= maximum else {
            count.wrappingSubtract(1, ordering: .relaxed)
            throw RPCError(
                .resourceExhausted, "the gateway is at its limit of \(maximum) requests in flight; retry shortly",
                notProcessed: true)
        }
    }

    /// Ends a request admitted by `enter()`.
    func leave() {
        count.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Requests in flight now.
    var current: Int { count.load(ordering: .relaxed) }
}
